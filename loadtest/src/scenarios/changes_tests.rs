//! Tests of the changes scenario's feed reading, answer scanning and ack matching.

use super::*;

fn deliveries(list: &[(&'static str, &str, &str, Instant)]) -> Deliveries {
    let mut m = Deliveries::default();
    for (e, id, u, at) in list {
        m.entry((*e, id.to_string()))
            .or_default()
            .push((u.to_string(), *at));
    }
    m
}

#[test]
fn an_answer_is_scanned_as_it_parses() {
    let body = br#"{"data":[{"entity":"notes","id":"n1","op":"upsert","record":{"id":"n1","body_html":"<p>a \"}{\" b</p>","nested":{"x":[1,{"y":"}"}]},"updated_at":"2026-01-01T00:00:00.001Z"}},{"entity":"tasks","id":"t1","op":"delete","deleted_at":"2026-01-01T00:00:00.002Z"}],"next_since":"tok","has_more":false,"request_id":"r"}"#;
    let (data, tail) = scan_answer(body).unwrap();
    let parsed: FeedAnswer = serde_json::from_slice(body).unwrap();
    let parsed: Vec<Seen> = parsed.data.into_iter().map(Seen::from).collect();
    assert_eq!(data, parsed);
    assert_eq!(
        tail,
        Tail {
            next_since: "tok".into(),
            has_more: false
        }
    );
    let empty = br#"{"data":[],"next_since":"t","has_more":true,"request_id":"r"}"#;
    assert_eq!(scan_answer(empty).unwrap().0, []);
    // Not the shape recruitd writes (members reordered, an escaped id): not scanned.
    assert!(scan_answer(br#"{"next_since":"t","data":[],"has_more":true}"#).is_none());
    assert!(scan_answer(br#"{"data":[{"entity":"notes","id":"n\u0031","op":"delete","deleted_at":"x"}],"next_since":"t","has_more":true}"#).is_none());
    // A record cut short is no record.
    assert!(scan_answer(
        br#"{"data":[{"entity":"notes","id":"n","op":"upsert","record":{"id":"n""#
    )
    .is_none());
}

#[test]
fn the_next_token_is_read_off_the_end() {
    let body = br#"{"data":[{"entity":"notes","id":"n","op":"delete","deleted_at":"x"}],"next_since":"AbC-_1","has_more":true,"request_id":"r"}"#;
    assert_eq!(peek(body), Some(("AbC-_1".into(), true)));
    let body = br#"{"data":[],"next_since":"Z","has_more":false,"request_id":"r"}"#;
    assert_eq!(peek(body), Some(("Z".into(), false)));
    assert_eq!(peek(br#"{"error":{"code":"BAD_REQUEST"}}"#), None);
}

#[test]
fn fingerprints_tell_records_apart() {
    let a = br#"{"id":"n1","body_html":"<p>one</p>","updated_at":"2026-01-01T00:00:00.001Z"}"#;
    // One byte changed at every place (in the whole words and in the remainder):
    // a fingerprint that skipped any byte would miss one of them.
    for at in 0..a.len() {
        let mut b = *a;
        b[at] ^= 1;
        assert_ne!(hash_of(a), hash_of(&b), "byte {at}");
    }
    assert_ne!(hash_of(b"abcdefghi"), hash_of(b"abcdefghj"));
    assert_ne!(hash_of(b"abc"), hash_of(b"abd"));
    assert_ne!(hash_of(b"abc"), hash_of(b"abc\0"));
    assert_ne!(hash_of(b""), hash_of(b"\0"));
}

#[test]
fn a_write_is_matched_to_the_first_delivery_that_shows_it() {
    let t0 = Instant::now();
    let ms = Duration::from_millis;
    let d = deliveries(&[
        ("notes", "a", "2026-01-01T00:00:00.010Z", t0 + ms(1)),
        ("notes", "a", "2026-01-01T00:00:00.020Z", t0 + ms(25)),
        ("notes", "a", "2026-01-01T00:00:00.030Z", t0 + ms(40)),
    ]);
    let ack = |id: &str, u: &str, sent_ms: u64| Ack {
        entity: "notes",
        id: id.into(),
        updated_at: u.into(),
        sent_wall: "2026-01-01T00:00:00.000Z".into(),
        sent: t0 + ms(sent_ms),
    };
    let rec = Recorder::new(t0, t0 + Duration::from_secs(60));
    let acks = [
        ack("a", "2026-01-01T00:00:00.020Z", 5),
        ack("a", "2026-01-01T00:00:00.025Z", 10),
        ack("b", "2026-01-01T00:00:00.020Z", 10),
    ];
    let labels = Labels {
        sent: "change delivered (write sent → feed)",
        stamped: "change delivered (updated_at → feed)",
    };
    assert_eq!(match_acks(&acks, &d, &rec, &labels), (2, 0));
    let m = rec.finish();
    let e = &m.endpoints[labels.sent];
    assert_eq!((e.ok, e.error_count()), (2, 1));
    let h = e.latency.as_ref().unwrap();
    // 25 - 5 ms and 40 - 10 ms.
    assert_eq!(h.min() / 1000, 20);
    assert_eq!(h.max() / 1000, 30);
    assert!(e.error_examples[0].contains("notes b"));
    // Stamped 20 ms after the first was sent (at 5): delivered at once; the second
    // stamped 25 ms after it was sent (at 10), delivered at 40: 5 ms.
    let e = &m.endpoints[labels.stamped];
    assert_eq!((e.ok, e.error_count()), (2, 0));
    let h = e.latency.as_ref().unwrap();
    assert_eq!(h.min() / 1000, 0);
    assert_eq!(h.max() / 1000, 5);
}

#[test]
fn a_write_that_changed_nothing_is_not_expected_in_the_feed() {
    let t0 = Instant::now();
    let rec = Recorder::new(t0, t0 + Duration::from_secs(60));
    let acks = [Ack {
        entity: "tasks",
        id: "x".into(),
        updated_at: "2026-01-01T00:00:00.000Z".into(),
        sent_wall: "2026-01-01T00:00:05.000Z".into(),
        sent: t0,
    }];
    assert_eq!(
        match_acks(
            &acks,
            &Deliveries::default(),
            &rec,
            &Labels {
                sent: "delivered",
                stamped: "stamped"
            }
        ),
        (0, 1)
    );
    assert!(rec.finish().endpoints.is_empty());
}

#[test]
fn an_answer_is_taken_into_the_mirror_and_checked() {
    let t0 = Instant::now();
    let mut feed = Received {
        token: "t0".into(),
        mirror: Mirror::default(),
        deliveries: Some(Deliveries::default()),
        changes: 0,
    };
    let body = br#"{"data":[
        {"entity":"notes","id":"n1","op":"upsert","record":{"id":"n1","updated_at":"2026-01-01T00:00:00.001Z"}},
        {"entity":"tasks","id":"t1","op":"delete","deleted_at":"2026-01-01T00:00:00.002Z"}
    ],"next_since":"t1","has_more":true,"request_id":"r"}"#;
    let t = feed.take(body, t0, true).unwrap();
    assert_eq!((t.changes, t.has_more, t.problem), (2, true, None));
    assert_eq!(feed.token, "t1");
    assert!(feed.mirror[&("notes", "n1".to_string())].is_some());
    assert_eq!(feed.mirror[&("tasks", "t1".to_string())], None);
    assert_eq!(
        feed.deliveries.as_ref().unwrap()[&("notes", "n1".to_string())][0].0,
        "2026-01-01T00:00:00.001Z"
    );
    // Compact answers, as the server writes them, go through the scanner.
    let compact = br#"{"data":[{"entity":"notes","id":"n3","op":"upsert","record":{"id":"n3","updated_at":"2026-01-01T00:00:00.003Z"}},{"entity":"tasks","id":"t1","op":"upsert","record":{"id":"t1","updated_at":"2026-01-01T00:00:00.004Z"}}],"next_since":"t2","has_more":false,"request_id":"r"}"#;
    assert!(scan_answer(compact).is_some(), "the scanner reads it");
    let t = feed.take(compact, t0, false).unwrap();
    assert_eq!((t.changes, t.has_more, t.problem), (2, false, None));
    assert_eq!(feed.token, "t2");
    assert!(feed.mirror[&("tasks", "t1".to_string())].is_some());
    assert_eq!(
        feed.deliveries.as_ref().unwrap()[&("notes", "n3".to_string())][0].0,
        "2026-01-01T00:00:00.003Z"
    );
    let twice = br#"{"data":[{"entity":"notes","id":"n1","op":"delete","deleted_at":"x"},{"entity":"notes","id":"n1","op":"delete","deleted_at":"x"}],"next_since":"t2","has_more":false}"#;
    let t = feed.take(twice, t0, false).unwrap();
    assert!(t.problem.unwrap().contains("twice in one answer"));
    let widgets = br#"{"data":[{"entity":"widgets","id":"w","op":"delete","deleted_at":"x"}],"next_since":"t2","has_more":false}"#;
    let t = feed.take(widgets, t0, false).unwrap();
    assert!(t.problem.unwrap().contains("unknown entity"));
    let wrong = br#"{"data":[{"entity":"notes","id":"n2","op":"upsert","deleted_at":"x"}],
        "next_since":"t3","has_more":false}"#;
    assert!(feed
        .take(wrong, t0, false)
        .unwrap()
        .problem
        .unwrap()
        .contains("wrong members"));
}
