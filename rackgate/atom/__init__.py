"""The ATOM server: launch, boot watching, log parsing, the OpenAI-protocol client and load on it."""
