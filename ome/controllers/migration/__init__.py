"""Migration controller: migration requests on InferenceServices and surge moves of OMENative Instances."""
