//! What the server tells its operator: [`metrics`], the Prometheus figures every part of
//! the server counts into (served at `/metrics` on both interfaces), and [`logging`],
//! the log's set-up (text or JSON lines, its level, a non-blocking writer).

pub mod logging;
pub mod metrics;
