//! A minimal client of a running server's admin interface, so that `recruitd key` acts
//! on the server's key ring at once (revocation effective on the next request) when a
//! server runs on the same data dir. Without one the command writes the store directly,
//! and only if no server holds the store lock (`store::lock`).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// What a call to the admin interface came to.
pub enum AdminReply {
    /// Nothing listens there: no server is running.
    NoServer,
    /// The server answered (status, JSON body).
    Answer(u16, serde_json::Value),
}

/// Sends one request to the admin interface at `addr`.
pub fn call(
    addr: SocketAddr,
    token: &str,
    method: &str,
    path: &str,
    body: Option<&serde_json::Value>,
) -> anyhow::Result<AdminReply> {
    let mut stream = match TcpStream::connect_timeout(&addr, Duration::from_millis(500)) {
        Ok(s) => s,
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::ConnectionRefused
                    | std::io::ErrorKind::TimedOut
                    | std::io::ErrorKind::AddrNotAvailable
            ) =>
        {
            return Ok(AdminReply::NoServer)
        }
        Err(e) => return Err(e.into()),
    };
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let payload = body.map(|b| b.to_string()).unwrap_or_default();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{payload}",
        payload.len()
    );
    stream.write_all(request.as_bytes())?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| anyhow::anyhow!("admin interface at {addr} sent a malformed answer"))?;
    let status: u16 = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| anyhow::anyhow!("admin interface at {addr} sent a malformed status line"))?;
    let json = serde_json::from_str(body).unwrap_or(serde_json::Value::Null);
    Ok(AdminReply::Answer(status, json))
}
