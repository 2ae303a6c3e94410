import { methodColour } from '@creditlab/charts';

/** A method's name with its colour swatch: the same colour as in every chart. */
export function MethodName({ name, label }: { name: string; label?: string }) {
  return (
    <span className="method">
      <span className="swatch" style={{ background: methodColour(name) }} aria-hidden />
      {label ?? name}
    </span>
  );
}
