"""Expectations for the ACC rows."""
from pydantic import Field

from .base import Section


class AccuracyExpect(Section):
    # The gate's generation budget: K3 reasons before it answers; 12288 is the validated value.
    max_tokens: int = Field(default=12288, gt=0)
    # ACC-BUDGET probe question.
    budget_prompt: str = "What is 17 + 25? Answer with the number only."
