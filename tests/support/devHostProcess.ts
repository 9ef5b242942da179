/** The dev host as a process, for tests: the same spawner the soak and the benchmark use. */
export { spawnDevHost, type DevHostProcess } from '../../scripts/devHostProcess';
