"""Disk models: the profiles of modelled drives (profiles) and what a model's daemon reports (stats).

The daemon itself is crates/diskmodel (fsmeter-diskmodel); the target that puts a filesystem on it
is fsmeter.provision.targets.diskmodel, and calibration is fsmeter.calibration.
"""
