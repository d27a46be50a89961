/**
 * `mcec-recorder/sim`: the embedded MCEC simulator and the demo (its scripted agent and runDemo), for tests,
 * benchmarks and trying the recorder without Windows. Kept off the package root, which is the recorder's API.
 */
export * from './demo/index.js';
export * from './sim/index.js';
