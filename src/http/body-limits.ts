// Request body limits, apart from the app so the Node tools (the memory CLI) check a document
// against the same limit before sending it, instead of learning it from a 413 half way through.

/** Character files can carry long lore and examples; chat messages cannot. */
export const MAX_AGENT_BODY_BYTES = 512 * 1024;
export const MAX_MESSAGE_BODY_BYTES = 64 * 1024;
/** Up to 500 memories of 8,000 characters would not fit; 1 MiB holds a few hundred real ones. */
export const MAX_MEMORY_BODY_BYTES = 1024 * 1024;
