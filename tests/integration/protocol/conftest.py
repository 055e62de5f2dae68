import sys
from pathlib import Path

# The tests import the small wire client that lives next to them.
sys.path.insert(0, str(Path(__file__).resolve().parent))
