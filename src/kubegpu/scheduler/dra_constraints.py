"""A claim's constraints while the structured allocator takes devices (k8s.io/dynamic-resource-allocation
structured/internal/*/constraint.go and ``matchAttributeConstraint``): ``MatchAttribute`` (every device of
the named requests has one value of the attribute) and ``DistinctAttribute`` (KEP-5075: pairwise different
values). Each ``add`` says whether a device may join, ``remove`` undoes the last ``add`` of that request.
Imports the model only.
"""

from __future__ import annotations

from kubegpu.model.dra import AttrValue, Device, DeviceConstraint, DeviceSubRequest


class MatchAttribute:
    """One ``matchAttribute`` constraint while a claim is being allocated (upstream keeps the first value
    and a count, not the devices)."""

    __slots__ = ("attribute", "count", "requests", "value")

    def __init__(self, c: DeviceConstraint) -> None:
        self.requests = frozenset(c.requests)
        self.attribute = c.match_attribute
        self.value: tuple[type, AttrValue] | None = None
        self.count = 0

    def applies(self, sub: DeviceSubRequest) -> bool:
        """Every request when none is named; else the request (``sub.name``'s parent) or the subrequest."""
        if not self.requests:
            return True
        return sub.name in self.requests or sub.name.partition("/")[0] in self.requests

    def add(self, sub: DeviceSubRequest, device: Device) -> bool:
        got = device.attributes.get(self.attribute)
        if got is None:
            return False
        typed = (type(got), got)  # bool is not int here: an int 1 never matches a bool true
        if self.count == 0:
            self.value = typed
        elif typed != self.value:
            return False
        self.count += 1
        return True

    def remove(self, sub: DeviceSubRequest) -> None:
        self.count -= 1


class DistinctAttribute(MatchAttribute):
    """One ``distinctAttribute`` constraint (KEP-5075, constraint.go ``distinctAttributeConstraint``): each
    device's value differs from those already taken (a value of another type never equals). 1.36 keeps one
    value per request name, so it compares with the request's last device only (``Features``)."""

    __slots__ = ("per_request", "values")

    def __init__(self, c: DeviceConstraint, per_request: bool) -> None:
        super().__init__(c)
        self.attribute = c.distinct_attribute
        self.per_request = per_request
        self.values: list[tuple[str, tuple[type, AttrValue]]] = []  # (request, typed value) in order

    def add(self, sub: DeviceSubRequest, device: Device) -> bool:
        got = device.attributes.get(self.attribute)
        if got is None:
            return False
        typed = (type(got), got)
        if any(v == typed for _, v in self.values):
            return False
        request = sub.name.partition("/")[0]
        if self.per_request:  # a map keyed by request name: the new value replaces the request's last
            self.values = [(r, v) for r, v in self.values if r != request]
        self.values.append((request, typed))
        return True

    def remove(self, sub: DeviceSubRequest) -> None:
        if self.per_request:  # upstream deletes the request's entry
            request = sub.name.partition("/")[0]
            self.values = [(r, v) for r, v in self.values if r != request]
        else:
            self.values.pop()
