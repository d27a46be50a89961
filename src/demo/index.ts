/** The demo: a scripted agent (reusable against any dispatch) and `npm run demo` as a library function. */
export { DEMO_SCENARIO, type DemoOptions, type DemoResult, defaultSessionsDir, runDemo } from './run-demo.js';
export {
  type AgentCall,
  type AgentStep,
  DEMO_STEPS,
  DEMO_WINDOWS,
  runScriptedAgent,
  type ScriptedRun,
  type StepSink,
} from './scripted-agent.js';
