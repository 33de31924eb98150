//! One `ConversionReview`, answered as it lies (issue 27, finding 1): the review is read borrowing
//! from its body, each object converted by the machine's conversion straight from its text into the
//! answer (`blueprint_machine::conversion::convert_into`), never decoded into JSON values or copied
//! whole. A review of 2 MB whose Blueprint held a million-element list used to take 68 MB (each
//! element a 32-byte value, the object cloned once more by the conversion), enough for one request
//! to get the operator killed under its memory limit; now the memory is the body and the answer.

use std::borrow::Cow;

use blueprint_machine::conversion::{ApiVersion, convert_into};
use http::StatusCode;
use serde::Deserialize;
use serde_json::value::RawValue;

const REVIEW_API_VERSION: &str = "apiextensions.k8s.io/v1";
const REVIEW_KIND: &str = "ConversionReview";

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Review<'a> {
    #[serde(borrow, default)]
    api_version: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    request: Option<Request<'a>>,
}

#[derive(Deserialize)]
struct Request<'a> {
    #[serde(borrow)]
    uid: Cow<'a, str>,
    #[serde(borrow, rename = "desiredAPIVersion")]
    desired_api_version: Cow<'a, str>,
    /// The objects, as their text: each is converted where it lies.
    #[serde(borrow)]
    objects: &'a RawValue,
}

/// The answer to the review `body`: 200 and the answered review (the conversion failed: a failure
/// naming the object and why; the API server gives that to its client, never a half-converted list),
/// or 400 when the body is not a review.
pub fn answer(body: &[u8]) -> (StatusCode, Vec<u8>) {
    let review = match std::str::from_utf8(body)
        .map_err(|e| e.to_string())
        .and_then(|text| serde_json::from_str::<Review<'_>>(text).map_err(|e| e.to_string()))
    {
        Ok(review) => review,
        Err(error) => return (StatusCode::BAD_REQUEST, format!("not a ConversionReview: {error}").into_bytes()),
    };
    let mut out = Vec::with_capacity(body.len() + 256);
    let api_version = review.api_version.as_deref().unwrap_or(REVIEW_API_VERSION);
    let Some(request) = review.request else {
        write_head(&mut out, api_version, review.kind.as_deref(), "");
        write_failure(&mut out, "request missing in ConversionReview", "BadRequest");
        return (StatusCode::OK, out);
    };
    write_head(&mut out, api_version, review.kind.as_deref(), &request.uid);
    let desired = &request.desired_api_version;
    let Some((_, to)) = ApiVersion::parse(desired) else {
        let message = format!("desiredAPIVersion {desired:?} is not a served Blueprint version (v1, v2 or v3)");
        write_failure(&mut out, &message, "ConversionFailed");
        return (StatusCode::OK, out);
    };
    let head = out.len();
    match convert_all(request.objects, to, &mut out) {
        Ok(()) => out.extend_from_slice(br#","result":{"status":"Success"}}}"#),
        Err(message) => {
            out.truncate(head);
            write_failure(&mut out, &message, "ConversionFailed");
        }
    }
    (StatusCode::OK, out)
}

/// `{"apiVersion":…,"kind":…,"response":{"uid":…,` (the rest follows).
fn write_head(out: &mut Vec<u8>, api_version: &str, kind: Option<&str>, uid: &str) {
    out.extend_from_slice(br#"{"apiVersion":"#);
    write_string(out, api_version);
    out.extend_from_slice(br#","kind":"#);
    write_string(out, kind.unwrap_or(REVIEW_KIND));
    out.extend_from_slice(br#","response":{"uid":"#);
    write_string(out, uid);
}

/// The rest of a failed review: no objects, the failure.
fn write_failure(out: &mut Vec<u8>, message: &str, reason: &str) {
    out.extend_from_slice(br#","convertedObjects":[],"result":{"status":"Failure","message":"#);
    write_string(out, message);
    out.extend_from_slice(br#","reason":"#);
    write_string(out, reason);
    out.extend_from_slice(b"}}}");
}

/// `,"convertedObjects":[…]`, each object converted in turn; the first that fails stops it, with its
/// index and why.
fn convert_all(objects: &RawValue, to: ApiVersion, out: &mut Vec<u8>) -> Result<(), String> {
    if !objects.get().starts_with('[') {
        return Err("request.objects is not a list".into());
    }
    out.extend_from_slice(br#","convertedObjects":["#);
    let mut index = 0usize;
    let mut failed = None;
    let mut seq = serde_json::Deserializer::from_str(objects.get());
    let _ = serde::Deserializer::deserialize_seq(
        &mut seq,
        EachObject(&mut |object: &RawValue| {
            if index > 0 {
                out.push(b',');
            }
            let converted = convert_into(object, to, out).map_err(|e| format!("object {index}: {e}"));
            index += 1;
            converted.map_err(|message| failed = Some(message))
        }),
    );
    if let Some(message) = failed {
        return Err(message);
    }
    out.push(b']');
    Ok(())
}

/// Visits each item of a JSON array as its text, one at a time (the list is never held as values).
struct EachObject<'f, F>(&'f mut F);

impl<'de, F: FnMut(&'de RawValue) -> Result<(), ()>> serde::de::Visitor<'de> for EachObject<'_, F> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a list of objects")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut items: A) -> Result<(), A::Error> {
        while let Some(item) = items.next_element::<&'de RawValue>()? {
            (self.0)(item).map_err(|()| serde::de::Error::custom("stopped"))?;
        }
        Ok(())
    }
}

fn write_string(out: &mut Vec<u8>, text: &str) {
    serde_json::to_writer(out, text).expect("writing into memory cannot fail");
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn review(objects: Value, desired: &str) -> Vec<u8> {
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
               "request": {"uid": "u-1", "desiredAPIVersion": desired, "objects": objects}})
        .to_string()
        .into_bytes()
    }

    fn blueprint(version: &str) -> Value {
        json!({"apiVersion": format!("k8s.cloudogu.com/{version}"), "kind": "Blueprint", "metadata": {"name": "b"},
               "spec": {"blueprintMask": {"manifest": {"dogus": []}}}})
    }

    fn answered(body: &[u8]) -> Value {
        let (status, answer) = answer(body);
        assert_eq!(status, StatusCode::OK);
        serde_json::from_slice(&answer).unwrap()
    }

    #[test]
    fn each_object_is_converted_in_order_and_the_review_answered() {
        let answer = answered(&review(json!([blueprint("v3"), blueprint("v3")]), "k8s.cloudogu.com/v2"));
        assert_eq!(answer["apiVersion"], "apiextensions.k8s.io/v1");
        assert_eq!(answer["kind"], "ConversionReview");
        assert_eq!(answer["response"]["uid"], "u-1");
        assert_eq!(answer["response"]["result"], json!({"status": "Success"}));
        let objects = answer["response"]["convertedObjects"].as_array().unwrap();
        assert_eq!(objects.len(), 2);
        assert_eq!(objects[1]["apiVersion"], "k8s.cloudogu.com/v2");
        assert_eq!(objects[1]["spec"]["blueprintMask"], json!({"dogus": []}));
        let none = answered(&review(json!([]), "k8s.cloudogu.com/v3"));
        assert_eq!(none["response"]["convertedObjects"], json!([]));
    }

    #[test]
    fn one_object_that_cannot_be_converted_fails_the_review_without_a_half_list() {
        let answer = answered(&review(json!([blueprint("v3"), {"kind": "Dogu"}]), "k8s.cloudogu.com/v2"));
        assert_eq!(answer["response"]["uid"], "u-1");
        assert_eq!(answer["response"]["convertedObjects"], json!([]));
        assert_eq!(answer["response"]["result"]["status"], "Failure");
        assert_eq!(answer["response"]["result"]["reason"], "ConversionFailed");
        assert_eq!(answer["response"]["result"]["message"], "object 1: kind \"Dogu\" is not a Blueprint");
        let unserved = answered(&review(json!([blueprint("v3")]), "k8s.cloudogu.com/v4"));
        assert!(
            unserved["response"]["result"]["message"].as_str().unwrap().contains("is not a served Blueprint version")
        );
    }

    #[test]
    fn what_is_not_a_review_is_a_bad_request() {
        let (status, text) = answer(b"{\"request\": 5}");
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert!(String::from_utf8(text).unwrap().starts_with("not a ConversionReview: "));
        assert_eq!(answer(&[0xff, 0xfe]).0, StatusCode::BAD_REQUEST);
        let missing = answered(b"{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"ConversionReview\"}");
        assert_eq!(missing["response"]["result"]["message"], "request missing in ConversionReview");
    }

    /// The finding's review: a Blueprint whose spec holds a list of about a million numbers. It is
    /// converted as text (the list copied, never decoded): the answer holds it unchanged.
    #[test]
    fn a_huge_field_the_conversion_does_not_touch_is_copied_as_text() {
        let list = format!("[{}0]", "0,".repeat(999_999));
        let object = format!(
            r#"{{"apiVersion":"k8s.cloudogu.com/v3","kind":"Blueprint","metadata":{{"name":"b"}},"spec":{{"x":{list}}}}}"#
        );
        let body = format!(
            r#"{{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{{"uid":"u","desiredAPIVersion":"k8s.cloudogu.com/v2","objects":[{object}]}}}}"#
        );
        let (status, answer) = answer(body.as_bytes());
        assert_eq!(status, StatusCode::OK);
        let text = String::from_utf8(answer).unwrap();
        assert!(text.contains(&format!(r#""spec":{{"x":{list}}}"#)), "the list as it was sent");
        assert!(text.len() < body.len() + 200, "nothing added but the answer's frame");
    }
}
