"""What every test suite of the repository shares."""

from hypothesis import settings

# Hypothesis fails an example that runs longer than 200 ms by default: a wall-clock
# threshold, which a shared and loaded machine trips at random. Examples are judged on what
# they return, never on how fast.
settings.register_profile("secondbrain", deadline=None)
settings.load_profile("secondbrain")
