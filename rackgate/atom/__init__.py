"""The ATOM server: launch, boot watching, log parsing, and the OpenAI-protocol client."""
