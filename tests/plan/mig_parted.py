"""mig-parted configuration text copied from upstream, shared by the MIG planning test modules."""

from __future__ import annotations

# mig-parted deployments/systemd/config-default.yaml at bd7160f: the all-balanced entries of RTX PRO 6000
# Blackwell and A30-24GB (by device-filter) and two A30 single-profile entries, copied by hand
BLACKWELL_AND_A30 = """
version: v1
mig-configs:
  all-balanced:
    - device-filter: ["0x2BB510DE"]
      devices: all
      mig-enabled: true
      mig-devices: {"1g.24gb": 2, "2g.48gb": 1}
    - device-filter: "0x20B710DE"
      devices: all
      mig-enabled: true
      mig-devices: {"1g.6gb": 2, "2g.12gb": 1}
  all-1g.6gb.me:
    - devices: all
      mig-enabled: true
      mig-devices: {"1g.6gb+me": 1}
  a30-two-media:
    - devices: all
      mig-enabled: true
      mig-devices: {"1g.6gb+me": 1, "2g.12gb+me": 1}
"""
