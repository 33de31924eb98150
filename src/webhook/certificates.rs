//! Where the webhook's serving certificate comes from (docs/webhook.md), in one of two modes:
//!
//! - **files** ([`files`]): `tls.crt` and `tls.key` in a folder (cert-manager's Secret, mounted), read
//!   again when a handshake finds that they changed; cert-manager's CA injector keeps the CRD's
//!   `caBundle`;
//! - **self-managed** ([`self_managed`]): a CA and a certificate made here, kept in a Secret that every
//!   replica watches, renewed 30 days before they expire, the CA written into the CRD's `caBundle`
//!   ([`ca_bundle`]).
//!
//! This module holds what is decided without I/O: which names a certificate is for, making one
//! ([`issue`]), whether one serves these names at this time ([`assess`]) and what to do with the
//! Secret that was read ([`decide`]). No key material ever leaves it in a message.

pub mod ca_bundle;
pub mod files;
pub mod self_managed;
pub mod trust;

use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose,
};
use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::ServerCertVerifier;
use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};

/// How long a certificate made here is valid: a year (and its CA as long: the CA signs this one
/// certificate and its key is dropped at once, so it never needs to outlive it).
pub const LIFETIME: SignedDuration = SignedDuration::from_hours(24 * 365);
/// How long before its expiry a certificate is replaced.
pub const RENEW_BEFORE: SignedDuration = SignedDuration::from_hours(24 * 30);
/// A certificate made here is valid from an hour ago: a replica or an API server whose clock is a
/// little behind accepts it too.
const BACKDATE: SignedDuration = SignedDuration::from_hours(1);

/// The keys of a `kubernetes.io/tls` Secret (and of cert-manager's), and the CA beside them.
pub const CERTIFICATE: &str = "tls.crt";
pub const PRIVATE_KEY: &str = "tls.key";
pub const CA: &str = "ca.crt";

/// A name a certificate is for: a DNS name or an IP address.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum SubjectName {
    Dns(String),
    Ip(IpAddr),
}

impl SubjectName {
    /// An IP address, or a DNS name (lower-cased).
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        if let Ok(ip) = text.parse::<IpAddr>() {
            return Ok(SubjectName::Ip(ip));
        }
        match ServerName::try_from(text) {
            Ok(ServerName::DnsName(_)) => Ok(SubjectName::Dns(text.to_ascii_lowercase())),
            _ => Err(format!("{text:?} is neither an IP address nor a DNS name")),
        }
    }

    fn server_name(&self) -> Option<ServerName<'static>> {
        match self {
            SubjectName::Dns(name) => ServerName::try_from(name.clone()).ok(),
            SubjectName::Ip(ip) => Some(ServerName::IpAddress((*ip).into())),
        }
    }
}

impl fmt::Display for SubjectName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SubjectName::Dns(name) => f.write_str(name),
            SubjectName::Ip(ip) => write!(f, "{ip}"),
        }
    }
}

/// The names a serving certificate is for: the Service's (what the API server asks for; every replica
/// wants the same) and extra ones (for tests: `127.0.0.1`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServingNames {
    service: Vec<SubjectName>,
    extra: Vec<SubjectName>,
}

impl ServingNames {
    /// `<service>`, `<service>.<namespace>`, `<service>.<namespace>.svc` (the name the API server
    /// checks) and `<service>.<namespace>.svc.cluster.local`, and `extra`.
    pub fn new(service: &str, namespace: &str, extra: &[SubjectName]) -> Self {
        let service = [
            service.to_owned(),
            format!("{service}.{namespace}"),
            format!("{service}.{namespace}.svc"),
            format!("{service}.{namespace}.svc.cluster.local"),
        ]
        .into_iter()
        .map(SubjectName::Dns)
        .collect::<Vec<_>>();
        let mut extra: Vec<SubjectName> = extra.iter().filter(|n| !service.contains(n)).cloned().collect();
        extra.sort();
        extra.dedup();
        ServingNames { service, extra }
    }

    /// Just `names` (the first is checked first), without a Service: a test's server on loopback.
    pub fn of(names: &[SubjectName]) -> Self {
        ServingNames { service: names.to_vec(), extra: Vec::new() }
    }

    /// Every name, the Service's first.
    pub fn all(&self) -> impl Iterator<Item = &SubjectName> {
        self.service.iter().chain(&self.extra)
    }
}

/// What the Secret holds, as PEM text: the certificate (`tls.crt`), its key (`tls.key`) and the CAs
/// the API server is to trust (`ca.crt`: the one that signed it, and during a renewal the previous
/// one).
#[derive(Clone, PartialEq, Eq)]
pub struct Material {
    pub certificate: String,
    pub key: String,
    pub ca: String,
}

/// Never shows the key.
impl fmt::Debug for Material {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Material").field("certificate", &self.certificate).field("ca", &self.ca).finish_non_exhaustive()
    }
}

impl Material {
    /// The three keys of the Secret; one missing or not text is named.
    pub fn from_secret(secret: &Secret) -> Result<Self, String> {
        let data = secret.data.as_ref();
        let text = |key: &str| -> Result<String, String> {
            let bytes = data.and_then(|d| d.get(key)).ok_or_else(|| format!("the Secret has no {key}"))?;
            String::from_utf8(bytes.0.clone()).map_err(|_| format!("the Secret's {key} is not PEM text"))
        };
        Ok(Material { certificate: text(CERTIFICATE)?, key: text(PRIVATE_KEY)?, ca: text(CA)? })
    }

    /// The certificate (with any chain after it) and its key, as a server presents them; why not (never
    /// with key material).
    pub fn certified_key(&self) -> Result<CertifiedKey, String> {
        let chain = certificates(&self.certificate).ok_or(format!("{CERTIFICATE} holds no PEM certificate"))?;
        let private_key = PrivateKeyDer::from_pem_slice(self.key.as_bytes())
            .map_err(|_| format!("{PRIVATE_KEY} holds no PEM private key"))?;
        CertifiedKey::from_der(chain, private_key, &rustls::crypto::ring::default_provider())
            .map_err(|e| format!("{PRIVATE_KEY} is not the key of {CERTIFICATE}: {e}"))
    }

    /// The Secret's `data`.
    pub fn data(&self) -> BTreeMap<String, ByteString> {
        [(CERTIFICATE, &self.certificate), (PRIVATE_KEY, &self.key), (CA, &self.ca)]
            .into_iter()
            .map(|(key, text)| (key.to_owned(), ByteString(text.as_bytes().to_vec())))
            .collect()
    }
}

/// A new CA and a certificate it signed for `names`, valid from `now` (an hour earlier) for
/// [`LIFETIME`]. The CA's key is dropped here: nothing else is ever signed with it. `ca.crt` holds the
/// new CA and, after it, `previous_ca` (the CA of the certificate being replaced, still trusted while
/// replicas switch to the new one).
pub fn issue(names: &ServingNames, now: Timestamp, previous_ca: Option<&str>) -> Result<Material, rcgen::Error> {
    let epoch = || rcgen::date_time_ymd(1970, 1, 1);
    let (not_before, not_after) = (since_epoch(now - BACKDATE), since_epoch(now + LIFETIME));

    let ca_key = KeyPair::generate()?;
    let mut ca = CertificateParams::default();
    ca.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    ca.distinguished_name = rcgen::DistinguishedName::new();
    // Each CA its own name: two in one bundle (during a renewal) are told apart.
    ca.distinguished_name.push(DnType::CommonName, format!("blueprint-operator webhook CA {now}"));
    ca.not_before = epoch() + not_before;
    ca.not_after = epoch() + not_after;
    let ca_certificate = ca.self_signed(&ca_key)?;
    let issuer = Issuer::new(ca, ca_key);

    let key = KeyPair::generate()?;
    let mut serving = CertificateParams::new(names.all().map(ToString::to_string).collect::<Vec<_>>())?;
    serving.distinguished_name = rcgen::DistinguishedName::new();
    if let Some(first) = names.service.get(2).or(names.service.first()) {
        serving.distinguished_name.push(DnType::CommonName, first.to_string());
    }
    serving.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    serving.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    serving.use_authority_key_identifier_extension = true;
    serving.not_before = epoch() + not_before;
    serving.not_after = epoch() + not_after;
    let certificate = serving.signed_by(&key, &issuer)?;

    let mut ca = ca_certificate.pem();
    if let Some(previous) = previous_ca {
        ca.push_str(previous);
    }
    Ok(Material { certificate: certificate.pem(), key: key.serialize_pem(), ca })
}

/// A certificate that serves the Service's names now.
#[derive(Clone)]
pub struct Assessment {
    /// What the server presents.
    pub key: Arc<CertifiedKey>,
    /// When the certificate or the CA that signed it expires, whichever comes first.
    pub expires: Timestamp,
    /// That CA, as PEM (kept beside the next CA while replicas switch).
    pub issuer: String,
    /// Wanted names it is not valid for (extra names; the Service's it has).
    pub missing: Vec<SubjectName>,
}

impl Assessment {
    /// When it is to be replaced: [`RENEW_BEFORE`] its expiry.
    pub fn renew_at(&self) -> Timestamp {
        self.expires - RENEW_BEFORE
    }
}

/// Whether `material` can serve now: its certificate and key parse and belong together, a CA of
/// `ca.crt` signed it, and it is valid now for every name of the Service (checked as a TLS client
/// checks it, by rustls' verifier). Which of the extra names it lacks, and when it or its CA expires.
/// The error says why not (never with key material).
pub fn assess(material: &Material, names: &ServingNames, now: Timestamp) -> Result<Assessment, String> {
    let key = material.certified_key()?;
    let chain = &key.cert;
    let cas = certificates(&material.ca).ok_or(format!("{CA} holds no PEM certificate"))?;
    let (leaf, intermediates) = chain.split_first().expect("certificates() is never empty");
    let at = UnixTime::since_unix_epoch(since_epoch(now));
    let first = names.service.first().and_then(SubjectName::server_name).ok_or("no Service name to check")?;

    // The CA that signed it: the first of ca.crt under which it is valid now.
    let mut refusal = None;
    let mut signed = None;
    for ca in &cas {
        let verifier = verifier(ca)?;
        match verifier.verify_server_cert(leaf, intermediates, &first, &[], at) {
            Ok(_) => {
                signed = Some((ca, verifier));
                break;
            }
            Err(error) => refusal = refusal.or(Some(error)),
        }
    }
    let Some((ca, verifier)) = signed else {
        let why = refusal.map(|e| e.to_string()).unwrap_or_default();
        return Err(format!("{CERTIFICATE} is not valid now for {first:?} under a CA of {CA}: {why}"));
    };
    let valid_for = |name: &SubjectName| {
        name.server_name()
            .is_some_and(|server| verifier.verify_server_cert(leaf, intermediates, &server, &[], at).is_ok())
    };
    if let Some(name) = names.service.iter().find(|name| !valid_for(name)) {
        return Err(format!("{CERTIFICATE} is not valid for {name}"));
    }
    let missing = names.extra.iter().filter(|name| !valid_for(name)).cloned().collect();
    let (_, leaf_expires) = validity(leaf).ok_or(format!("{CERTIFICATE}: its validity cannot be read"))?;
    let (_, ca_expires) = validity(ca).ok_or(format!("{CA}: its validity cannot be read"))?;
    Ok(Assessment { key: Arc::new(key), expires: leaf_expires.min(ca_expires), issuer: pem(ca), missing })
}

/// What to do with the Secret that was read.
#[derive(Debug)]
pub enum Decision {
    /// It serves every wanted name beyond the renewal margin: use it (and renew it at `renew_at`).
    Keep(Assessment),
    /// There is none: make one.
    Create,
    /// Replace it (conditional on the `resource_version` read); `previous_ca` is the CA of its
    /// certificate when that certificate still serves now, to be trusted beside the new one.
    Replace { resource_version: String, reason: String, previous_ca: Option<String> },
}

impl fmt::Debug for Assessment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Assessment").field("expires", &self.expires).field("missing", &self.missing).finish()
    }
}

/// The decision on the Secret `read` (none: missing) for `names` at `now`: kept while its certificate
/// is valid for every name and neither it nor its CA expires within [`RENEW_BEFORE`]; replaced when
/// it expires sooner, lacks a name, or is unreadable in any way.
pub fn decide(read: Option<&Secret>, names: &ServingNames, now: Timestamp) -> Decision {
    let Some(secret) = read else { return Decision::Create };
    let resource_version = secret.metadata.resource_version.clone().unwrap_or_default();
    let replace = |reason: String, previous_ca: Option<String>| Decision::Replace {
        resource_version: resource_version.clone(),
        reason,
        previous_ca,
    };
    match Material::from_secret(secret).and_then(|material| assess(&material, names, now)) {
        Err(reason) => replace(reason, None),
        Ok(assessment) if !assessment.missing.is_empty() => {
            let missing: Vec<String> = assessment.missing.iter().map(ToString::to_string).collect();
            replace(format!("the certificate is not valid for {}", missing.join(", ")), Some(assessment.issuer))
        }
        Ok(assessment) if assessment.renew_at() <= now => replace(
            format!("the certificate expires at {}, within {} days", assessment.expires, RENEW_BEFORE.as_hours() / 24),
            Some(assessment.issuer),
        ),
        Ok(assessment) => Decision::Keep(assessment),
    }
}

/// Whether a Secret another replica wrote can be served at once (it is valid now for the Service's
/// names; an extra name it lacks or a near expiry is this replica's to mend, at its renewal).
pub fn adoptable(secret: &Secret, names: &ServingNames, now: Timestamp) -> Result<Assessment, String> {
    Material::from_secret(secret).and_then(|material| assess(&material, names, now))
}

/// Every PEM certificate of `text`; `None` if there is none, or one does not decode.
pub fn certificates(text: &str) -> Option<Vec<CertificateDer<'static>>> {
    let all: Vec<_> = CertificateDer::pem_slice_iter(text.as_bytes()).collect::<Result<_, _>>().ok()?;
    (!all.is_empty()).then_some(all)
}

/// A verifier trusting `ca` only.
fn verifier(ca: &CertificateDer<'static>) -> Result<Arc<WebPkiServerVerifier>, String> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca.clone()).map_err(|e| format!("{CA}: not a CA certificate: {e}"))?;
    WebPkiServerVerifier::builder_with_provider(Arc::new(roots), Arc::new(rustls::crypto::ring::default_provider()))
        .build()
        .map_err(|e| format!("{CA}: {e}"))
}

/// `der` as PEM text.
fn pem(der: &CertificateDer<'_>) -> String {
    use base64::Engine;
    let encoded = base64::engine::general_purpose::STANDARD.encode(der.as_ref());
    let mut text = String::from("-----BEGIN CERTIFICATE-----\n");
    for line in encoded.as_bytes().chunks(64) {
        text.push_str(std::str::from_utf8(line).expect("base64 is ASCII"));
        text.push('\n');
    }
    text.push_str("-----END CERTIFICATE-----\n");
    text
}

fn since_epoch(time: Timestamp) -> Duration {
    Duration::from_secs(u64::try_from(time.as_second()).unwrap_or(0))
}

/// The validity (notBefore, notAfter) of a DER certificate (RFC 5280, 4.1): read from its
/// `tbsCertificate` without an X.509 library (rustls checks validity, but does not tell it).
pub fn validity(der: &[u8]) -> Option<(Timestamp, Timestamp)> {
    let (certificate, _) = element(der, 0x30)?;
    let (mut fields, _) = element(certificate, 0x30)?;
    if fields.first() == Some(&0xA0) {
        fields = element(fields, 0xA0)?.1; // [0] version
    }
    let (_, fields) = element(fields, 0x02)?; // serialNumber
    let (_, fields) = element(fields, 0x30)?; // signature
    let (_, fields) = element(fields, 0x30)?; // issuer
    let (validity, _) = element(fields, 0x30)?;
    let (not_before, rest) = time(validity)?;
    let (not_after, _) = time(rest)?;
    Some((not_before, not_after))
}

/// The DER element of `tag` at the start of `input`: its content, and what follows it.
fn element(input: &[u8], tag: u8) -> Option<(&[u8], &[u8])> {
    let (&found, rest) = input.split_first()?;
    let (&length, rest) = rest.split_first()?;
    if found != tag {
        return None;
    }
    let (length, rest) = if length < 0x80 {
        (usize::from(length), rest)
    } else {
        let octets = usize::from(length & 0x7f);
        if octets == 0 || octets > 4 || rest.len() < octets {
            return None;
        }
        let (octets, rest) = rest.split_at(octets);
        (octets.iter().fold(0usize, |sum, octet| (sum << 8) | usize::from(*octet)), rest)
    };
    (rest.len() >= length).then(|| rest.split_at(length))
}

/// A `UTCTime` (`YYMMDDHHMMSSZ`, 1950–2049) or `GeneralizedTime` (`YYYYMMDDHHMMSSZ`).
fn time(input: &[u8]) -> Option<(Timestamp, &[u8])> {
    let tag = *input.first()?;
    let (content, rest) = element(input, tag)?;
    let text = std::str::from_utf8(content).ok()?.strip_suffix('Z')?;
    if !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let full = match (tag, text.len()) {
        (0x17, 12) => format!("{}{text}", if text[..2].parse::<u8>().ok()? < 50 { "20" } else { "19" }),
        (0x18, 14) => text.to_owned(),
        _ => return None,
    };
    let number = |from: usize, to: usize| full[from..to].parse::<i16>().ok();
    let part = |from: usize| number(from, from + 2).and_then(|n| i8::try_from(n).ok());
    let civil =
        jiff::civil::DateTime::new(number(0, 4)?, part(4)?, part(6)?, part(8)?, part(10)?, part(12)?, 0).ok()?;
    Some((civil.to_zoned(jiff::tz::TimeZone::UTC).ok()?.timestamp(), rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: SignedDuration = SignedDuration::from_hours(24);

    fn names() -> ServingNames {
        ServingNames::new("blueprint-operator-webhook", "ecosystem", &[SubjectName::parse("127.0.0.1").unwrap()])
    }

    fn now() -> Timestamp {
        "2026-03-01T12:00:00Z".parse().unwrap()
    }

    fn secret(material: &Material) -> Secret {
        let mut secret = Secret { data: Some(material.data()), ..Secret::default() };
        secret.metadata.resource_version = Some("7".into());
        secret
    }

    #[test]
    fn the_names_of_the_service_and_the_extra_ones() {
        let all: Vec<String> = names().all().map(ToString::to_string).collect();
        assert_eq!(
            all,
            [
                "blueprint-operator-webhook",
                "blueprint-operator-webhook.ecosystem",
                "blueprint-operator-webhook.ecosystem.svc",
                "blueprint-operator-webhook.ecosystem.svc.cluster.local",
                "127.0.0.1"
            ]
        );
        assert_eq!(SubjectName::parse(" ::1 "), Ok(SubjectName::Ip("::1".parse().unwrap())));
        assert_eq!(SubjectName::parse("Webhook.Example.COM"), Ok(SubjectName::Dns("webhook.example.com".into())));
        assert!(SubjectName::parse("not a name").is_err());
        assert!(SubjectName::parse("").is_err());
    }

    #[test]
    fn a_fresh_certificate_is_kept_until_30_days_before_it_expires() {
        let material = issue(&names(), now(), None).unwrap();
        let Decision::Keep(kept) = decide(Some(&secret(&material)), &names(), now()) else { panic!("fresh: kept") };
        assert_eq!(kept.expires, now() + LIFETIME, "the certificate and its CA: a year");
        assert_eq!(kept.renew_at(), now() + LIFETIME - RENEW_BEFORE);
        assert!(kept.missing.is_empty());
        let (not_before, not_after) = validity(kept.key.end_entity_cert().unwrap()).unwrap();
        assert_eq!((not_before, not_after), (now() - BACKDATE, now() + LIFETIME));

        // 336 days later it still has 29 days: renewed.
        let later = now() + LIFETIME - RENEW_BEFORE + DAY;
        let Decision::Replace { resource_version, reason, previous_ca } =
            decide(Some(&secret(&material)), &names(), later)
        else {
            panic!("29 days before its expiry: replaced")
        };
        assert_eq!(resource_version, "7");
        assert!(reason.contains("within 30 days"), "{reason}");
        assert_eq!(previous_ca.as_deref(), Some(material.ca.as_str()), "its CA stays trusted while replicas switch");
        // A day earlier it is kept.
        assert!(matches!(decide(Some(&secret(&material)), &names(), later - DAY - DAY), Decision::Keep(_)));
        // Expired: replaced, and its CA no longer trusted.
        let expired = now() + LIFETIME + DAY;
        let Decision::Replace { reason, previous_ca, .. } = decide(Some(&secret(&material)), &names(), expired) else {
            panic!("expired: replaced")
        };
        assert!(reason.contains("not valid now"), "{reason}");
        assert_eq!(previous_ca, None);
    }

    #[test]
    fn a_certificate_without_a_wanted_name_is_replaced() {
        let others = ServingNames::new("other-service", "ecosystem", &[]);
        let material = issue(&others, now(), None).unwrap();
        let Decision::Replace { reason, previous_ca, .. } = decide(Some(&secret(&material)), &names(), now()) else {
            panic!("another Service's: replaced")
        };
        assert!(reason.contains("not valid"), "{reason}");
        assert_eq!(previous_ca, None, "it never served this Service");
        // The Service's names but not an extra one: replaced; it serves meanwhile (its CA stays).
        let without_extra = ServingNames::new("blueprint-operator-webhook", "ecosystem", &[]);
        let material = issue(&without_extra, now(), None).unwrap();
        let Decision::Replace { reason, previous_ca, .. } = decide(Some(&secret(&material)), &names(), now()) else {
            panic!("without 127.0.0.1: replaced")
        };
        assert_eq!(reason, "the certificate is not valid for 127.0.0.1");
        assert!(previous_ca.is_some());
        let adopted = adoptable(&secret(&material), &names(), now()).unwrap();
        assert_eq!(
            adopted.missing,
            [SubjectName::parse("127.0.0.1").unwrap()],
            "another replica's is served meanwhile"
        );
    }

    #[test]
    fn an_unreadable_secret_is_replaced_and_none_is_created() {
        assert!(matches!(decide(None, &names(), now()), Decision::Create));
        let material = issue(&names(), now(), None).unwrap();
        let garbage = |change: fn(&mut Material)| {
            let mut material = material.clone();
            change(&mut material);
            match decide(Some(&secret(&material)), &names(), now()) {
                Decision::Replace { reason, previous_ca: None, .. } => reason,
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(garbage(|m| m.certificate = "garbage".into()), "tls.crt holds no PEM certificate");
        assert_eq!(garbage(|m| m.key = "garbage".into()), "tls.key holds no PEM private key");
        assert_eq!(garbage(|m| m.ca = String::new()), "ca.crt holds no PEM certificate");
        let other = issue(&names(), now(), None).unwrap();
        let reason = garbage(|m| m.key = issue(&names(), now(), None).unwrap().key);
        assert!(reason.starts_with("tls.key is not the key of tls.crt"), "{reason}");
        let mut foreign = material.clone();
        foreign.ca = other.ca;
        let Decision::Replace { reason, .. } = decide(Some(&secret(&foreign)), &names(), now()) else { panic!() };
        assert!(reason.contains("under a CA of ca.crt"), "{reason}");
        let mut missing = secret(&material);
        missing.data.as_mut().unwrap().remove("ca.crt");
        let Decision::Replace { reason, .. } = decide(Some(&missing), &names(), now()) else { panic!() };
        assert_eq!(reason, "the Secret has no ca.crt");
        // No key material in any reason or debug output.
        let shown = format!("{material:?} {:?}", decide(Some(&secret(&material)), &names(), now()));
        assert!(!shown.contains("PRIVATE KEY"), "{shown}");
    }

    #[test]
    fn a_renewal_trusts_the_new_ca_and_the_previous_one() {
        let first = issue(&names(), now(), None).unwrap();
        let later = now() + LIFETIME - RENEW_BEFORE;
        let Decision::Replace { previous_ca, .. } = decide(Some(&secret(&first)), &names(), later) else { panic!() };
        let second = issue(&names(), later, previous_ca.as_deref()).unwrap();
        assert_eq!(certificates(&second.ca).unwrap().len(), 2);
        assert!(second.ca.ends_with(&first.ca));
        // The old certificate verifies under the new bundle, and so does the new one.
        let mut old_under_new = first.clone();
        old_under_new.ca = second.ca.clone();
        assert!(assess(&old_under_new, &names(), later).is_ok());
        let Decision::Keep(kept) = decide(Some(&secret(&second)), &names(), later) else { panic!() };
        assert_eq!(kept.expires, later + LIFETIME, "the new CA signed it, not the older one");
        // The next renewal drops the oldest CA: two at most.
        let Decision::Replace { previous_ca, .. } = decide(Some(&secret(&second)), &names(), kept.renew_at()) else {
            panic!()
        };
        let third = issue(&names(), kept.renew_at(), previous_ca.as_deref()).unwrap();
        assert_eq!(certificates(&third.ca).unwrap().len(), 2);
        assert!(!third.ca.contains(first.ca.trim()));
    }

    #[test]
    fn validity_of_both_time_formats() {
        // UTCTime until 2049, GeneralizedTime from 2050 (RFC 5280, 4.1.2.5).
        let far = "2070-01-02T03:04:05Z".parse::<Timestamp>().unwrap();
        let material = issue(&names(), far, None).unwrap();
        let leaf = certificates(&material.certificate).unwrap().remove(0);
        assert_eq!(validity(&leaf), Some((far - BACKDATE, far + LIFETIME)));
        assert_eq!(validity(b"\x30\x03\x02\x01"), None);
        assert_eq!(validity(&[]), None);
    }
}
