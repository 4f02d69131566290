//! Synthetic snapshot generator (`recruitd generate`).
