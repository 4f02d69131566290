use super::*;
use crate::webhooks::secret::Secret;
use crate::webhooks::signature;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

const INSECURE: Policy = Policy {
    allow_insecure: true,
};

/// A request as a receiver read it.
#[derive(Debug)]
struct Received {
    head: String,
    body: Vec<u8>,
}

impl Received {
    fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }
}

/// What a test receiver does once it has read a request.
#[derive(Clone, Copy)]
enum Then {
    /// Writes these bytes and closes.
    Answer(&'static str),
    /// Writes nothing, and keeps the connection open.
    Hang,
    /// Answers 200 with a chunked body that never ends.
    Stream,
}

/// Reads one HTTP/1.1 request (head, then a `Content-Length` body).
async fn read_request(io: &mut (impl AsyncReadExt + Unpin)) -> Option<Received> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let n = io.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8(buf[..head_end].to_vec()).ok()?;
    let mut received = Received {
        head,
        body: buf[head_end..].to_vec(),
    };
    let len: usize = received.header("content-length")?.parse().ok()?;
    while received.body.len() < len {
        let n = io.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        received.body.extend_from_slice(&chunk[..n]);
    }
    Some(received)
}

async fn answer(io: &mut (impl AsyncWriteExt + Unpin), then: Then) {
    match then {
        Then::Answer(text) => {
            let _ = io.write_all(text.as_bytes()).await;
            let _ = io.shutdown().await;
        }
        Then::Hang => std::future::pending::<()>().await,
        Then::Stream => {
            let _ = io
                .write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
                .await;
            let chunk = format!("{:x}\r\n{}\r\n", 8192, "x".repeat(8192));
            while io.write_all(chunk.as_bytes()).await.is_ok() {}
        }
    }
}

/// A plain-HTTP receiver on loopback; every request it reads comes out of the channel.
async fn receiver(then: Then) -> (SocketAddr, mpsc::UnboundedReceiver<Received>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let at = listener.local_addr().unwrap();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((mut tcp, _)) = listener.accept().await {
            let tx = tx.clone();
            tokio::spawn(async move {
                if let Some(r) = read_request(&mut tcp).await {
                    let _ = tx.send(r);
                    answer(&mut tcp, then).await;
                }
            });
        }
    });
    (at, rx)
}

const OK: &str = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

fn request<'a>(url: &'a url::Url, signature: &'a str, body: &'static [u8]) -> Request<'a> {
    Request {
        url,
        webhook_id: "whd_0123",
        timestamp: 1_800_000_000,
        signature,
        body: Bytes::from_static(body),
    }
}

#[tokio::test]
async fn a_delivery_arrives_signed_with_its_headers_and_body() {
    let (at, mut got) = receiver(Then::Answer(OK)).await;
    let url = address::check(&format!("http://{at}/hooks/in?tenant=7"), INSECURE).unwrap();
    let secret = Secret::generate();
    let body = br#"{"type":"changes","data":[]}"#;
    let signed = signature::header([&secret], "whd_0123", 1_800_000_000, body);
    let sent = Sender::new(INSECURE)
        .send(&request(&url, &signed, body))
        .await;
    assert_eq!(sent.status, Some(200), "{sent:?}");
    assert_eq!(sent.error, None);
    let r = got.recv().await.unwrap();
    assert!(
        r.head.starts_with("POST /hooks/in?tenant=7 HTTP/1.1\r\n"),
        "{}",
        r.head
    );
    assert_eq!(r.header("host"), Some(at.to_string().as_str()));
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.header("webhook-id"), Some("whd_0123"));
    assert_eq!(r.header("webhook-timestamp"), Some("1800000000"));
    assert_eq!(r.body, body);
    // What the receiver got is what the secret signed.
    let sig = r.header("webhook-signature").unwrap();
    assert!(signature::verify(
        &secret,
        sig,
        "whd_0123",
        1_800_000_000,
        &r.body,
        1_800_000_000
    ));
}

#[tokio::test]
async fn statuses_come_back_as_answered_and_a_redirect_is_not_followed() {
    let (elsewhere, mut elsewhere_got) = receiver(Then::Answer(OK)).await;
    let redirect: &'static str = Box::leak(
        format!("HTTP/1.1 307 Temporary Redirect\r\nLocation: http://{elsewhere}/\r\nContent-Length: 0\r\n\r\n")
            .into_boxed_str(),
    );
    for (answer, status) in [
        (redirect, 307),
        (
            "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n",
            500,
        ),
        ("HTTP/1.1 410 Gone\r\nContent-Length: 0\r\n\r\n", 410),
        ("HTTP/1.1 204 No Content\r\n\r\n", 204),
    ] {
        let (at, mut got) = receiver(Then::Answer(answer)).await;
        let url = address::check(&format!("http://{at}/"), INSECURE).unwrap();
        let sent = Sender::new(INSECURE)
            .send(&request(&url, "v1,x", b"{}"))
            .await;
        assert_eq!(sent.status, Some(status), "{sent:?}");
        assert!(got.recv().await.is_some());
    }
    assert!(
        elsewhere_got.try_recv().is_err(),
        "the redirect was followed"
    );
}

#[tokio::test]
async fn a_receiver_that_does_not_answer_in_time_fails_the_attempt_at_the_deadline() {
    let (at, mut got) = receiver(Then::Hang).await;
    let url = address::check(&format!("http://{at}/"), INSECURE).unwrap();
    let within = Duration::from_millis(300);
    let sent = Sender::new(INSECURE)
        .answer_within(within)
        .send(&request(&url, "v1,x", b"{}"))
        .await;
    assert_eq!(sent.status, None);
    assert!(
        sent.error.as_deref().unwrap().contains("no answer within"),
        "{sent:?}"
    );
    assert!(
        sent.took >= within && sent.took < within * 5,
        "{:?}",
        sent.took
    );
    assert!(got.recv().await.is_some());
}

#[tokio::test]
async fn an_endless_answer_is_read_only_in_part() {
    let (at, _got) = receiver(Then::Stream).await;
    let url = address::check(&format!("http://{at}/"), INSECURE).unwrap();
    let within = Duration::from_secs(5);
    let sent = Sender::new(INSECURE)
        .answer_within(within)
        .send(&request(&url, "v1,x", b"{}"))
        .await;
    assert_eq!(sent.status, Some(200), "{sent:?}");
    // It stopped after its 64 KiB, long before the deadline.
    assert!(sent.took < within / 2, "{:?}", sent.took);
}

#[tokio::test]
async fn a_private_address_is_refused_before_any_connection() {
    let (at, mut got) = receiver(Then::Answer(OK)).await;
    let secure = Policy::default();
    // A name that resolves to loopback passes the form check; the delivery's own
    // lookup refuses it.
    let url = address::check(&format!("https://localhost:{}/", at.port()), secure).unwrap();
    let sent = Sender::new(secure)
        .send(&request(&url, "v1,x", b"{}"))
        .await;
    assert_eq!(sent.status, None);
    assert!(
        sent.error.as_deref().unwrap().contains("public addresses"),
        "{sent:?}"
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(got.try_recv().is_err(), "the receiver was reached");
}

#[tokio::test]
async fn https_is_checked_against_the_trusted_authorities() {
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["localhost".to_string()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let der = cert.der().clone();
    let server = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(
        vec![der.clone()],
        rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
    )
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(server));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, mut got) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (acceptor, tx) = (acceptor.clone(), tx.clone());
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                if let Some(r) = read_request(&mut tls).await {
                    let _ = tx.send(r);
                    answer(&mut tls, Then::Answer(OK)).await;
                }
            });
        }
    });
    let url = address::check(&format!("https://localhost:{port}/in"), INSECURE).unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(der).unwrap();
    let trusting = Sender::with_roots(INSECURE, roots);
    let sent = trusting.send(&request(&url, "v1,x", b"{\"a\":1}")).await;
    assert_eq!(sent.status, Some(200), "{sent:?}");
    assert_eq!(got.recv().await.unwrap().body, b"{\"a\":1}");

    let doubting = Sender::with_roots(INSECURE, rustls::RootCertStore::empty());
    let sent = doubting.send(&request(&url, "v1,x", b"{}")).await;
    assert_eq!(sent.status, None);
    assert!(
        sent.error.as_deref().unwrap().starts_with("TLS"),
        "{sent:?}"
    );
    assert!(
        got.try_recv().is_err(),
        "a request went over an unchecked connection"
    );
}

/// An attempt of an empty batch to a plain-HTTP receiver at `at`.
fn outgoing_to(sender: &Sender, at: SocketAddr) -> Outgoing {
    Outgoing {
        sender: sender.clone(),
        url: address::check(&format!("http://{at}/"), INSECURE).unwrap(),
        secrets: vec![Secret::generate()],
        id: "whd_0123".into(),
        timestamp: 1_800_000_000,
        body: Bytes::from_static(b"{}"),
    }
}

/// Attempts sent as idle work take turns, but a receiver that never answers holds a
/// turn for `TURN_MOST` at the most: another endpoint's catch-up goes on beside it.
#[tokio::test]
async fn hanging_receivers_hold_no_turn_for_long() {
    let sender = Sender::with_roots(INSECURE, rustls::RootCertStore::empty())
        .answer_within(Duration::from_secs(60));
    let outgoing = |at: SocketAddr| outgoing_to(&sender, at);
    let (hanging, mut hung) = receiver(Then::Hang).await;
    let mut stuck = Vec::new();
    for _ in 0..runtime::BULK_TURNS + 1 {
        let (attempt, lock) = (outgoing(hanging), Arc::new(tokio::sync::Mutex::new(())));
        stuck.push(tokio::spawn(async move {
            attempt.send_as_idle_work(&lock, Duration::ZERO).await
        }));
    }
    for _ in 0..runtime::BULK_TURNS + 1 {
        hung.recv()
            .await
            .expect("each hanging attempt reaches its receiver");
    }
    let (healthy, _) = receiver(Then::Answer(OK)).await;
    let lock = Arc::new(tokio::sync::Mutex::new(()));
    let sent = tokio::time::timeout(
        Duration::from_secs(10),
        outgoing(healthy).send_as_idle_work(&lock, Duration::ZERO),
    )
    .await
    .expect("an attempt beside hanging ones is sent and answered");
    assert_eq!(sent.status, Some(200));
    assert!(
        stuck.iter().all(|t| !t.is_finished()),
        "the hanging attempts still wait"
    );
}

/// Stopping an attempt sent as idle work (its endpoint's task aborted) stops it there
/// too: the endpoint's lock comes free, and no attempt of it is left under way.
#[tokio::test]
async fn a_dropped_idle_attempt_ends_and_frees_its_endpoint() {
    let sender = Sender::with_roots(INSECURE, rustls::RootCertStore::empty())
        .answer_within(Duration::from_secs(60));
    let (hanging, mut hung) = receiver(Then::Hang).await;
    let attempt = outgoing_to(&sender, hanging);
    let lock = Arc::new(tokio::sync::Mutex::new(()));
    let task = {
        let lock = lock.clone();
        tokio::spawn(async move { attempt.send_as_idle_work(&lock, Duration::ZERO).await })
    };
    hung.recv().await.expect("the attempt reaches its receiver");
    assert!(
        lock.try_lock().is_err(),
        "held while the attempt is under way"
    );
    task.abort();
    let _ = task.await;
    let freed = tokio::time::timeout(Duration::from_secs(10), lock.lock()).await;
    assert!(freed.is_ok(), "the attempt ends once its task is stopped");
}

/// Paced, attempts of different endpoints start `pace` apart at the soonest: the pause
/// is taken with the process's turn held, not beside it.
#[tokio::test]
async fn paced_attempts_keep_their_gap_across_endpoints() {
    let sender = Sender::with_roots(INSECURE, rustls::RootCertStore::empty());
    let (at, _got) = receiver(Then::Answer(OK)).await;
    let pace = Duration::from_millis(300);
    let started = Instant::now();
    let attempts: Vec<_> = (0..2)
        .map(|_| {
            let attempt = outgoing_to(&sender, at);
            let lock = Arc::new(tokio::sync::Mutex::new(()));
            tokio::spawn(async move { attempt.send_as_idle_work(&lock, pace).await })
        })
        .collect();
    for a in attempts {
        assert_eq!(a.await.unwrap().status, Some(200));
    }
    assert!(
        started.elapsed() >= pace * 2,
        "two endpoints' attempts, one pause each, in turn"
    );
}
