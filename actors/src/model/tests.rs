//! Every kind packs and unpacks to itself.

use super::*;
use crate::packed::rec::Rec;
use crate::snapshot::parse_slice;

/// Every record of the worked example, packed and unpacked, is itself again; its key
/// is its id.
#[test]
fn every_example_record_round_trips() {
    let snap = parse_slice(include_bytes!(
        "../../../tests/fixtures/snapshot-small.json"
    ))
    .expect("the example parses");
    let mut seen = 0;
    for u in snap.users.iter().filter_map(crate::snapshot::Entry::upsert) {
        let r = Rec::<User>::pack(u);
        assert_eq!(&r.raw(), u);
        assert_eq!(r.key(), u.id.as_bytes());
        seen += 1;
    }
    for s in snap
        .pipeline_stages
        .iter()
        .filter_map(crate::snapshot::Entry::upsert)
    {
        assert_eq!(&Rec::<PipelineStage>::pack(s).raw(), s);
        seen += 1;
    }
    for c in snap
        .companies
        .iter()
        .filter_map(crate::snapshot::Entry::upsert)
    {
        assert_eq!(&Rec::<Company>::pack(c).raw(), c);
        seen += 1;
    }
    for c in snap
        .contacts
        .iter()
        .filter_map(crate::snapshot::Entry::upsert)
    {
        let r = Rec::<Contact>::pack(c, Some("+1"), None);
        assert_eq!(&r.raw(), c);
        assert_eq!((r.phone(), r.mobile()), (Some("+1"), None));
        seen += 1;
    }
    for j in snap.jobs.iter().filter_map(crate::snapshot::Entry::upsert) {
        assert_eq!(&Rec::<Job>::pack(j).raw(), j);
        seen += 1;
    }
    for c in snap
        .candidates
        .iter()
        .filter_map(crate::snapshot::Entry::upsert)
    {
        let c = &c.raw();
        let r = Rec::<Candidate>::pack(c, None, Some("+44"));
        assert_eq!(&r.raw(), c);
        assert_eq!(r.key(), c.id.as_bytes());
        assert_eq!((r.phone(), r.mobile()), (None, Some("+44")));
        seen += 1;
    }
    for n in snap.notes.iter().filter_map(crate::snapshot::Entry::upsert) {
        let n = &n.raw();
        assert_eq!(&Rec::<Note>::pack(n).raw(), n);
        seen += 1;
    }
    for t in snap.tasks.iter().filter_map(crate::snapshot::Entry::upsert) {
        assert_eq!(&Rec::<Task>::pack(t).raw(), t);
        seen += 1;
    }
    for a in snap
        .attachments
        .iter()
        .filter_map(crate::snapshot::Entry::upsert)
    {
        let a = a.rec.raw();
        let r = Rec::<Attachment>::pack(&a);
        assert_eq!(r.raw(), a);
        assert_eq!(r.key(), a.id.as_bytes());
        seen += 1;
    }
    assert_eq!(seen, 15, "every record of the example was checked");
}

#[test]
fn optional_objects_and_numbers_survive_exactly() {
    let mut c = Candidate {
        id: Uuid::from_u128(1),
        person_id: Uuid::from_u128(2),
        job_id: None,
        name: Some("Zoë \"Z\" O'Neil\n".into()),
        email: None,
        phone: None,
        mobile: None,
        job_title: None,
        company: None,
        location: None,
        linkedin_url: None,
        stage_id: None,
        outcome: Some(Outcome::Rejected),
        rejected_at: Some(Stamp::from_millis(-5)),
        owner_id: None,
        salary: Some(CandidateSalary::default()),
        consent: None,
        created_at: Stamp::from_millis(0),
        updated_at: Stamp::from_millis(1),
    };
    assert_eq!(Rec::<Candidate>::pack(&c, None, None).raw(), c);
    c.salary = Some(CandidateSalary {
        current_amount: Some(serde_json::from_str("55000.5").unwrap()),
        expected_amount: Some(serde_json::from_str("-12").unwrap()),
        expected_currency: Some(String::new()),
        ..CandidateSalary::default()
    });
    c.consent = Some(Consent::default());
    assert_eq!(Rec::<Candidate>::pack(&c, None, None).raw(), c);
    let a = Attachment {
        id: "cv:abc".into(),
        parent_type: ParentType::Candidate,
        parent_id: Uuid::from_u128(1),
        filename: None,
        content_type: None,
        size: Some(0),
        kind: AttachmentKind::Cv,
        storage_ref: None,
        has_content: true,
        created_at: Stamp::from_millis(3),
        updated_at: Stamp::from_millis(4),
    };
    let r = Rec::<Attachment>::pack(&a);
    assert_eq!(r.raw(), a);
    assert_eq!(r.key(), b"cv:abc");
    assert!(r.is_candidate_cv());
}
