"""Names for what a test creates, unique so tests never see each other's topics."""

import uuid


def unique_topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"
