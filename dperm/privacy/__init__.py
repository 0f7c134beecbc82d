"""The privacy layer: neighbouring relations, noise, calibration, mechanisms, tuning."""
