"""The base of the `inferenceservice-config` ConfigMap's sections: fields read by their JSON names or
their Python ones, unknown fields kept (a newer chart may carry settings this controller does not read
yet), values frozen once parsed."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Section(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="allow", frozen=True)
