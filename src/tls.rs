//! TLS: certificates, rustls configuration, and refusal of plain HTTP on the API port.
