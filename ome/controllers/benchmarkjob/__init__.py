"""BenchmarkJob: a genai-bench Job against an InferenceService or a URL, and a status that follows it."""
