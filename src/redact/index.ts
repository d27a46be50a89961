/** Secrets, typed text and stray image bytes out of what a session stores. Pure: no I/O. */
export { Automaton } from './automaton.js';
export { base64Cores, echoForms, jsonForms, serverEscaped, urlForms } from './echoes.js';
export { scrubImageText } from './image-text.js';
export { scrubInlineSecrets, withoutUrlCredentials } from './inline-secrets.js';
export * from './redactor.js';
export {
  DEFAULT_SECRET_KEYS,
  isDefaultSecretKey,
  keyWords,
  normalizeKey,
  SECRET_WORDS,
  secretKeyMatcher,
} from './secret-keys.js';
export { SecretStore } from './secret-store.js';
export {
  hideAnswerText,
  redactCommandLine,
  rememberedTypedText,
  scrubTypedCommands,
  typedTextEchoes,
  typedTextMarker,
  typedTextReplacements,
} from './typed-text.js';
