/**
 * The trainer was asked for something that cannot be done (a parent run that does not exist, a
 * checkpoint it does not have, more iterations than it stored): found before any run was created,
 * so nothing was written. The command line exits with status 2 on it.
 */
export class TrainerInputError extends Error {}
