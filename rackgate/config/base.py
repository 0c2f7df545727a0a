"""Shared pydantic base: every rack-file table forbids unknown keys."""
from pydantic import BaseModel, ConfigDict


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
