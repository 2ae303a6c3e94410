import { ENVIRONMENT_NAMES, textEnvironment } from '../src/environments';

test('every listed name opens its environment; anything else, object property names included, is refused', () => {
  for (const name of ENVIRONMENT_NAMES) expect(() => textEnvironment(name)).not.toThrow();
  for (const name of [
    'mars',
    'household-huge',
    'household-constructor',
    'sokoban-__proto__',
    'errand-toString',
  ])
    expect(() => textEnvironment(name)).toThrow(
      `unknown environment "${name}"; one of household-tiny`,
    );
});
