/** The part of jstat (no published types) that libs/stats uses. */
declare module 'jstat' {
  export const jStat: {
    studentt: { cdf(x: number, dof: number): number; inv(p: number, dof: number): number };
  };
}
