"""The build: the stage table, several inputs as jobs, forked workers, and the outputs beside the object (manifest, header)."""
