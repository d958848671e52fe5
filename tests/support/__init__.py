"""What the tests share that is not a fixture: helpers, harnesses, the fuzz targets and their runner."""
