"""The bounds a config field's value must keep, as msgspec constraints (`Annotated[..., msgspec.Meta]`).

They are checked where a config is decoded (schema/load.py: files, `key=value` overrides, a command's
flags through `schema.load.argument`, environment kinds' args), so a value that cannot work (no env
workers, a negative step count, a zero deadline) stops the run before anything starts, with the
field's path in the message ("Expected `int` >= 1 - at `$.fabric.env_workers`"), instead of hanging
or failing later. A struct made directly in Python is not checked (msgspec checks on decoding only).
"""

from __future__ import annotations

from typing import Annotated

import msgspec

#: a count of things that must exist: at least one
Count = Annotated[int, msgspec.Meta(ge=1)]
#: a count or size where 0 means none (or: off)
Amount = Annotated[int, msgspec.Meta(ge=0)]
#: above 0 (a divisor, a rate)
Positive = Annotated[float, msgspec.Meta(gt=0)]
#: 0 or more (a learning rate, a weight)
NonNegative = Annotated[float, msgspec.Meta(ge=0)]
#: a duration that must pass: above 0
Seconds = Positive
#: a resource amount Ray reserves (0: none)
Resources = NonNegative
#: a sampling temperature (0: greedy)
Temperature = NonNegative
#: a share, a probability or a pass rate
Fraction = Annotated[float, msgspec.Meta(ge=0, le=1)]
#: a share that cannot be none (top-p, a GPU's memory share)
PositiveFraction = Annotated[float, msgspec.Meta(gt=0, le=1)]
#: a TCP port
Port = Annotated[int, msgspec.Meta(ge=1, le=65535)]
