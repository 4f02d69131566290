//! `GET /v1/search/phone` and `GET /v1/search/email`: every matching rule and every
//! response field, over HTTPS against the real application.

use crate::helpers::*;
use reqwest::Method;
use serde_json::{json, Value};

const LEO_PERSON: &str = "21b6ca4e-64ee-5e3c-89d8-7a0806815565";
const LEO_PRIMARY: &str = "a214ca67-7691-5c62-8910-a410373e10c9";
const LEO_JOB_ROW: &str = "b509f583-def1-5a25-9cb1-a1532b926c94";
const JOB: &str = "2fae0fc8-6eee-55da-8a7e-f15794b7515f";
const RAJ: &str = "0986a580-8fc6-5461-afb0-b69c0a512919";
const OLIVIA: &str = "c26c9743-a728-5f14-b348-d08024212444";
const HANA: &str = "c39ca419-8ea8-58e1-a02b-11d9dec22eb3";

const MIA: &str = "10000000-0000-4000-8000-000000000001";
const NOAH: &str = "10000000-0000-4000-8000-000000000002";
const OMAR: &str = "10000000-0000-4000-8000-000000000003";
const PIA: &str = "10000000-0000-4000-8000-000000000004";
const QUINN: &str = "10000000-0000-4000-8000-000000000005";
const ANN: &str = "10000000-0000-4000-8000-000000000006";
const SWITCHBOARD: &str = "20000000-0000-4000-8000-000000000001";

/// The primary row id of a test person (one row per person, same suffix).
fn row_of(person: &str) -> String {
    format!("3{}", &person[1..])
}

fn person(
    id: &str,
    name: &str,
    phone: Option<&str>,
    mobile: Option<&str>,
    email: Option<&str>,
) -> Value {
    json!({
        "id": row_of(id), "person_id": id, "job_id": null, "name": name,
        "phone": phone, "mobile": mobile, "email": email, "owner_id": OLIVIA,
        "created_at": "2026-09-01T09:00:00.000Z", "updated_at": "2026-09-01T09:00:00.000Z"
    })
}

/// The example workspace plus people arranged to exercise each matching rule.
fn search_fixture() -> Value {
    let mut s = example();
    let candidates = s["candidates"].as_array_mut().unwrap();
    candidates.extend([
        // Mia's mobile is Noah's phone: two people sharing a number.
        person(
            MIA,
            "Mia Moss",
            Some("+44 7700 900 555"),
            Some("07700 900777"),
            Some("Mia.Moss+CV@Mail.Example"),
        ),
        person(NOAH, "Noah North", Some("(07700) 900-777"), None, None),
        // Omar differs from Leo (07700 900123) only in the ninth digit from the end.
        person(
            OMAR,
            "Omar Okafor",
            Some("07800 900123"),
            None,
            Some("omar@mail.example"),
        ),
        person(PIA, "Pia Park", Some("2345 6789"), None, None),
        // Quinn's mobile is the Switchboard company's main number.
        person(
            QUINN,
            "Quinn Quirk",
            Some("07700 900888"),
            Some("020 7946 0999 ext. 4"),
            None,
        ),
        person(ANN, "Ann Archer", None, None, Some("ann+jobs@mail.example")),
    ]);
    s["companies"].as_array_mut().unwrap().push(json!({
        "id": SWITCHBOARD, "name": "Switchboard Ltd", "phone": "+44 20 7946 0999",
        "owner_id": RAJ, "created_at": "2026-09-01T09:00:00.000Z", "updated_at": "2026-09-01T09:00:00.000Z"
    }));
    s
}

async fn app_with_fixture(b: Backend) -> TestApp {
    let app = spawn_app(b).await;
    app.import_ok(&search_fixture()).await;
    app
}

/// GET a search, insisting on 200 with exactly `data` and `request_id`.
async fn search(app: &TestApp, path: &str) -> Value {
    let (s, body) = app.get(path, READ_KEY).await;
    assert_eq!(s, 200, "{path}: {body}");
    assert_eq!(body.as_object().unwrap().len(), 2, "{body}");
    assert!(body["request_id"].as_str().is_some_and(|r| !r.is_empty()));
    body["data"].clone()
}

fn enc(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
}

async fn phone(app: &TestApp, number: &str) -> Value {
    search(app, &format!("/v1/search/phone?number={}", enc(number))).await
}

fn person_ids(data: &Value) -> Vec<&str> {
    data["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["person_id"].as_str().unwrap())
        .collect()
}

async fn phone_result_has_every_field(b: Backend) {
    let app = app_with_fixture(b).await;
    let data = phone(&app, "07700 900123").await;
    assert_eq!(
        data,
        json!({
            "query": "07700 900123",
            "match_key": "700900123",
            "match_strategy": "last9",
            "match_confidence": "exact",
            "candidates": [{
                "person_id": LEO_PERSON,
                "name": "Leo Lambert",
                "phone": "+447700900123",
                "email": "leo.lambert@mail.example",
                // No owner on the record: the recruiter of the role the person is on.
                "owning_recruiter_id": RAJ,
                "records": [
                    {"candidate_row_id": LEO_PRIMARY, "job_id": null, "is_primary_record": true, "stage": null},
                    {"candidate_row_id": LEO_JOB_ROW, "job_id": JOB, "is_primary_record": false, "stage": "Interview"},
                ],
            }],
            "contacts": [],
            "companies": [],
        })
    );
}

async fn any_format_finds_the_same_person(b: Backend) {
    let app = app_with_fixture(b).await;
    for q in [
        "07700 900123",
        "+44 7700 900123",
        "+447700900123",
        "0044 7700 900 123",
        "(07700) 900-123",
        "447700900123",
        "7700900123",
        "700900123",
        "tel:+44-7700-900-123",
    ] {
        let data = phone(&app, q).await;
        assert_eq!(data["query"], q);
        assert_eq!(data["match_key"], "700900123", "{q}");
        assert_eq!(data["match_strategy"], "last9", "{q}");
        assert_eq!(data["match_confidence"], "exact", "{q}");
        assert_eq!(person_ids(&data), [LEO_PERSON], "{q}");
    }
    // The aliases phone and q, and a percent-encoded plus.
    for path in [
        "/v1/search/phone?phone=07700900123",
        "/v1/search/phone?q=07700900123",
        "/v1/search/phone?number=%2B447700900123",
        "/v1/search/phone?number=07700900123&q=07700900123",
    ] {
        let data = search(&app, path).await;
        assert_eq!(person_ids(&data), [LEO_PERSON], "{path}");
    }
}

async fn second_numbers_and_contacts_are_searched(b: Backend) {
    let app = app_with_fixture(b).await;
    // Hana is a contact; her mobile finds her.
    let data = phone(&app, "07700 900311").await;
    assert_eq!(data["match_confidence"], "exact");
    assert_eq!(data["candidates"], json!([]));
    assert_eq!(
        data["contacts"],
        json!([{
            "id": HANA, "name": "Hana Hiring", "phone": "+442079460011",
            "email": "hana@fabrikam.example", "company_id": FABRIKAM, "owning_recruiter_id": RAJ
        }])
    );
    // The same owner as the contact fetched by id.
    let (_, by_id) = app.get(&format!("/v1/contacts/{HANA}"), READ_KEY).await;
    assert_eq!(
        data["contacts"][0]["owning_recruiter_id"],
        by_id["data"]["owning_recruiter_id"]
    );
    // Mia's phone is her primary number: her entry shows it even when found by mobile.
    let data = phone(&app, "+44 7700 900555").await;
    assert_eq!(person_ids(&data), [MIA]);
    assert_eq!(data["candidates"][0]["phone"], "+447700900555");
    assert_eq!(data["candidates"][0]["email"], "Mia.Moss+CV@Mail.Example");
    assert_eq!(data["candidates"][0]["owning_recruiter_id"], OLIVIA);
}

async fn shared_number_is_ambiguous(b: Backend) {
    let app = app_with_fixture(b).await;
    // Mia holds it as her mobile, Noah as his phone: two people, never `exact`.
    let data = phone(&app, "07700900777").await;
    assert_eq!(data["match_strategy"], "last9");
    assert_eq!(data["match_confidence"], "ambiguous");
    assert_eq!(person_ids(&data), [MIA, NOAH], "sorted by name");
    assert_eq!(data["candidates"][1]["phone"], "+447700900777");
    assert_eq!(
        data["candidates"][0]["phone"], "+447700900555",
        "always the primary number, not the matched one"
    );
    // limit trims the candidates array, never the confidence.
    let data = search(&app, "/v1/search/phone?number=07700900777&limit=1").await;
    assert_eq!(data["candidates"].as_array().unwrap().len(), 1);
    assert_eq!(data["match_confidence"], "ambiguous");
    // A candidate and a contact on one number: two people.
    let mut s = search_fixture();
    s["contacts"][0]["phone"] = json!("07700 900555");
    app.import_ok(&s).await;
    let data = phone(&app, "07700900555").await;
    assert_eq!(data["match_confidence"], "ambiguous");
    assert_eq!(person_ids(&data), [MIA]);
    assert_eq!(data["contacts"][0]["id"], HANA);
}

async fn companies_never_count(b: Backend) {
    let app = app_with_fixture(b).await;
    // Only Fabrikam holds this number: companies populated, confidence none. Nine digits
    // found no person, so the eight-digit pass ran (and found the same company).
    let data = phone(&app, "+44 20 7946 0000").await;
    assert_eq!(data["match_confidence"], "none");
    assert_eq!(data["match_strategy"], "last8_fallback");
    assert_eq!(data["match_key"], "79460000");
    assert_eq!(data["candidates"], json!([]));
    assert_eq!(data["contacts"], json!([]));
    assert_eq!(
        data["companies"],
        json!([{"id": FABRIKAM, "name": "Fabrikam", "phone": "+44 20 7946 0000", "owning_recruiter_id": RAJ}])
    );
    // One person plus a company is exact (the extension is not part of the number).
    let data = phone(&app, "02079460999").await;
    assert_eq!(data["match_strategy"], "last9");
    assert_eq!(data["match_confidence"], "exact");
    assert_eq!(person_ids(&data), [QUINN]);
    assert_eq!(data["companies"][0]["id"], SWITCHBOARD);
}

async fn eight_digit_fallback(b: Backend) {
    let app = app_with_fixture(b).await;
    // Nine digits find Leo: the eight-digit pass must not run, so Omar (same last eight)
    // is not added.
    let data = phone(&app, "07700 900123").await;
    assert_eq!(person_ids(&data), [LEO_PERSON]);
    // Nine digits find nobody: the last eight find both Leo and Omar.
    let data = phone(&app, "07900 900123").await;
    assert_eq!(data["match_strategy"], "last8_fallback");
    assert_eq!(data["match_key"], "00900123");
    assert_eq!(data["match_confidence"], "ambiguous");
    assert_eq!(person_ids(&data), [LEO_PERSON, OMAR]);
    // Exactly eight digits: straight to the eight-digit key.
    let data = phone(&app, "2345-6789").await;
    assert_eq!(data["match_strategy"], "last8_fallback");
    assert_eq!(data["match_key"], "23456789");
    assert_eq!(data["match_confidence"], "exact");
    assert_eq!(person_ids(&data), [PIA]);
    // Nine digits that find nobody, eight that find Pia.
    let data = phone(&app, "9 9923 456 789").await;
    assert_eq!(
        (&data["match_strategy"], &data["match_key"]),
        (&json!("last8_fallback"), &json!("23456789"))
    );
    assert_eq!(person_ids(&data), [PIA]);
    // Nothing at all: none, with the key that was tried.
    let data = phone(&app, "+1 212 555 0199").await;
    assert_eq!(data["match_confidence"], "none");
    assert_eq!(data["match_strategy"], "last8_fallback");
    assert_eq!(data["match_key"], "25550199");
    assert_eq!(
        (&data["candidates"], &data["contacts"], &data["companies"]),
        (&json!([]), &json!([]), &json!([]))
    );
}

async fn too_few_digits_is_invalid_not_an_error(b: Backend) {
    let app = app_with_fixture(b).await;
    for q in ["1234567", "12-34", "abc", "", "+44", "900 123"] {
        let data = phone(&app, q).await;
        assert_eq!(data["query"], q);
        assert_eq!(data["match_confidence"], "invalid", "{q}");
        assert!(data.get("match_key").is_none(), "{q}: {data}");
        assert!(
            data["reason"].as_str().is_some_and(|r| r.contains('8')),
            "{data}"
        );
        assert_eq!(data["candidates"], json!([]));
        assert_eq!(data["contacts"], json!([]));
        assert_eq!(data["companies"], json!([]));
    }
    // Valid answers carry no reason.
    let data = phone(&app, "07700900123").await;
    assert!(data.get("reason").is_none());
}

async fn phone_parameters_are_checked(b: Backend) {
    let app = app_with_fixture(b).await;
    for path in [
        "/v1/search/phone",
        "/v1/search/phone?limit=5",
        "/v1/search/phone?numbr=07700900123",
        "/v1/search/phone?number=07700900123&number=07700900123",
        "/v1/search/phone?number=07700900123&phone=07700900124",
        "/v1/search/phone?number=07700900123&limit=0",
        "/v1/search/phone?number=07700900123&limit=2.5",
        "/v1/search/phone?number=07700900123&limit=%2B5",
        "/v1/search/phone?number=%zz",
        "/v1/search/email",
        "/v1/search/email?address=",
        "/v1/search/email?address=a@b.example&limit=-1",
    ] {
        let (s, body) = app.get(path, READ_KEY).await;
        assert_error(s, &body, 400, "BAD_REQUEST");
    }
    // Above 100 is clamped, not refused.
    let data = search(&app, "/v1/search/phone?number=07700900777&limit=1000").await;
    assert_eq!(data["candidates"].as_array().unwrap().len(), 2);
    // A key is needed; only GET is served.
    let res = app
        .req(Method::GET, "/v1/search/phone?number=07700900123", None)
        .send()
        .await
        .unwrap();
    let (s, body) = json_of(res).await;
    assert_error(s, &body, 401, "UNAUTHORIZED");
    for path in ["/v1/search/phone", "/v1/search/email"] {
        let res = app
            .req(Method::POST, path, Some(WRITE_KEY))
            .send()
            .await
            .unwrap();
        assert_eq!(res.headers()["allow"], "GET");
        let (s, body) = json_of(res).await;
        assert_error(s, &body, 405, "METHOD_NOT_ALLOWED");
    }
}

async fn email_search(b: Backend) {
    let app = app_with_fixture(b).await;
    let data = search(&app, "/v1/search/email?address=LEO.Lambert@MAIL.example").await;
    assert_eq!(
        data,
        json!({
            "query": "LEO.Lambert@MAIL.example",
            "match_confidence": "exact",
            "candidates": [{
                "person_id": LEO_PERSON,
                "name": "Leo Lambert",
                "email": "leo.lambert@mail.example",
                "phone": "+447700900123",
                "owning_recruiter_id": RAJ,
                "records": [
                    {"candidate_row_id": LEO_PRIMARY, "job_id": null, "is_primary_record": true},
                    {"candidate_row_id": LEO_JOB_ROW, "job_id": JOB, "is_primary_record": false},
                ],
            }],
            "contacts": [],
        })
    );
    // Contacts, through the aliases email and q.
    for path in [
        "/v1/search/email?email=hana@fabrikam.example",
        "/v1/search/email?q=Hana@Fabrikam.Example",
    ] {
        let data = search(&app, path).await;
        assert_eq!(data["match_confidence"], "exact");
        assert_eq!(
            data["contacts"],
            json!([{
                "id": HANA, "name": "Hana Hiring", "email": "hana@fabrikam.example",
                "phone": "+442079460011", "company_id": FABRIKAM, "owning_recruiter_id": RAJ
            }])
        );
    }
    // A plus sign, raw or percent-encoded.
    for path in [
        "/v1/search/email?address=ann+jobs@mail.example",
        "/v1/search/email?address=ann%2Bjobs%40mail.example",
        "/v1/search/email?address=Mia.Moss+cv@mail.example",
    ] {
        let data = search(&app, path).await;
        assert_eq!(data["match_confidence"], "exact", "{path}");
        assert_eq!(data["candidates"].as_array().unwrap().len(), 1, "{path}");
    }
    // The whole address only: no partial or suffix matches.
    for q in [
        "mail.example",
        "leo.lambert",
        "eo.lambert@mail.example",
        "ann jobs@mail.example",
    ] {
        let data = search(&app, &format!("/v1/search/email?address={}", enc(q))).await;
        assert_eq!(data["match_confidence"], "none", "{q}");
        assert_eq!(data["candidates"], json!([]));
        assert_eq!(data["contacts"], json!([]));
    }
    // Two people on one address are ambiguous; limit trims only the array.
    let mut s = search_fixture();
    s["candidates"][4]["email"] = json!("LEO.LAMBERT@mail.example");
    app.import_ok(&s).await;
    let data = search(
        &app,
        "/v1/search/email?address=leo.lambert@mail.example&limit=1",
    )
    .await;
    assert_eq!(data["match_confidence"], "ambiguous");
    assert_eq!(data["candidates"].as_array().unwrap().len(), 1);
}

async fn searches_see_every_committed_change(b: Backend) {
    let app = app_with_fixture(b).await;
    // Leo's number changes on both rows: the old number finds nobody at once, the new one
    // finds him.
    let mut s = search_fixture();
    for i in 0..2 {
        s["candidates"][i]["phone"] = json!("07700 900999");
    }
    s["contacts"][0]["mobile"] = Value::Null;
    s["contacts"][0]["email"] = json!("hana.new@fabrikam.example");
    app.import_ok(&s).await;
    let data = phone(&app, "07700900123").await;
    assert_eq!(
        person_ids(&data),
        [OMAR],
        "only the eight-digit neighbour is left"
    );
    assert_eq!(data["match_strategy"], "last8_fallback");
    let data = phone(&app, "07700900999").await;
    assert_eq!(person_ids(&data), [LEO_PERSON]);
    assert_eq!(phone(&app, "07700900311").await["match_confidence"], "none");
    let data = search(&app, "/v1/search/email?address=hana@fabrikam.example").await;
    assert_eq!(data["match_confidence"], "none");
    let data = search(&app, "/v1/search/email?address=hana.new@fabrikam.example").await;
    assert_eq!(data["contacts"][0]["id"], HANA);
    // Deleting a record removes it from the indexes.
    let mut del = example();
    del["candidates"] = json!([{"id": row_of(NOAH), "deleted": true}]);
    for k in [
        "users",
        "api_keys",
        "pipeline_stages",
        "companies",
        "contacts",
        "jobs",
        "notes",
        "tasks",
        "attachments",
    ] {
        del[k] = json!([]);
    }
    app.import_ok(&del).await;
    let data = phone(&app, "07700900777").await;
    assert_eq!(data["match_confidence"], "exact");
    assert_eq!(person_ids(&data), [MIA]);
}

async fn searches_answer_without_the_store(b: Backend) {
    let app = app_with_fixture(b).await;
    app.store.close().await;
    let data = phone(&app, "07700 900123").await;
    assert_eq!(person_ids(&data), [LEO_PERSON]);
    let data = search(&app, "/v1/search/email?address=hana@fabrikam.example").await;
    assert_eq!(data["contacts"][0]["id"], HANA);
}

/// Enough numbers in one import to push the delta past its threshold: the actor merges
/// it into a new base in the background, and answers stay the same throughout.
async fn background_rebuild_keeps_answers(b: Backend) {
    let app = app_with_fixture(b).await;
    let mut s = search_fixture();
    let extra: Vec<Value> = (0..5000)
        .map(|i| {
            json!({
                "id": format!("40000000-0000-4000-8000-{i:012}"),
                "person_id": format!("50000000-0000-4000-8000-{i:012}"),
                "name": format!("Bulk {i}"),
                "phone": format!("07700 8{i:05}"),
                "created_at": "2026-09-02T09:00:00.000Z", "updated_at": "2026-09-02T09:00:00.000Z"
            })
        })
        .collect();
    s["candidates"].as_array_mut().unwrap().extend(extra);
    app.import_ok(&s).await;
    let ws = app
        .registry
        .handle(uuid::Uuid::parse_str("b2574901-bbf6-5245-9d3f-3dd074396143").unwrap())
        .unwrap();
    let mut merged = false;
    for _ in 0..500 {
        if ws.state().search.phone.delta_len() == 0 {
            merged = true;
            break;
        }
        actix_web::rt::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(merged, "the delta was merged into a new base");
    assert!(ws.state().search.phone.base().len() >= 5000);
    let data = phone(&app, "07700 804321").await;
    assert_eq!(data["candidates"][0]["name"], "Bulk 4321");
    assert_eq!(person_ids(&phone(&app, "07700 900123").await), [LEO_PERSON]);
}

store_test!(
    phone_result_has_every_field,
    any_format_finds_the_same_person,
    second_numbers_and_contacts_are_searched,
    shared_number_is_ambiguous,
    companies_never_count,
    eight_digit_fallback,
    too_few_digits_is_invalid_not_an_error,
    phone_parameters_are_checked,
    email_search,
    searches_see_every_committed_change,
    searches_answer_without_the_store,
    background_rebuild_keeps_answers,
);
