//! The certificates, keys and tokens of one control plane (rcgen), as files in its folder.

use std::io::Write;
use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, SanType};

/// The certificates, keys and tokens of one control plane, as files in its folder.
pub(crate) struct Pki {
    pub ca_pem: String,
    pub ca_cert: PathBuf,
    pub server_cert: PathBuf,
    pub server_key: PathBuf,
    pub sa_key: PathBuf,
    pub sa_public: PathBuf,
    pub tokens: PathBuf,
    pub token: String,
}

impl Pki {
    /// The API server's certificate names `localhost`, 127.0.0.1 and `addresses` (a node's address,
    /// the `kubernetes` Service's cluster IP), and `names` (the Service's DNS names).
    pub fn new(dir: &Path, addresses: &[Ipv4Addr], names: &[&str]) -> Result<Self, String> {
        let err = |e: rcgen::Error| e.to_string();
        let ca_key = KeyPair::generate().map_err(err)?;
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(err)?;
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.distinguished_name.push(DnType::CommonName, "blueprint-operator test control plane");
        let ca = ca_params.self_signed(&ca_key).map_err(err)?;
        let issuer = Issuer::new(ca_params, ca_key);

        let server_key = KeyPair::generate().map_err(err)?;
        let dns = std::iter::once("localhost").chain(names.iter().copied()).map(str::to_owned).collect::<Vec<_>>();
        let mut server_params = CertificateParams::new(dns).map_err(err)?;
        for address in std::iter::once(&Ipv4Addr::LOCALHOST).chain(addresses) {
            server_params.subject_alt_names.push(SanType::IpAddress(IpAddr::V4(*address)));
        }
        server_params.distinguished_name.push(DnType::CommonName, "kube-apiserver");
        let server = server_params.signed_by(&server_key, &issuer).map_err(err)?;
        let sa_key = KeyPair::generate().map_err(err)?;

        let token = format!("admin-{:032x}", rand_u128());
        let write = |name: &str, text: &str| -> Result<PathBuf, String> {
            let path = dir.join(name);
            let mut file = std::fs::File::create(&path).map_err(|e| e.to_string())?;
            file.write_all(text.as_bytes()).map_err(|e| e.to_string())?;
            Ok(path)
        };
        Ok(Pki {
            ca_pem: ca.pem(),
            ca_cert: write("ca.crt", &ca.pem())?,
            server_cert: write("apiserver.crt", &server.pem())?,
            server_key: write("apiserver.key", &server_key.serialize_pem())?,
            sa_key: write("sa.key", &sa_key.serialize_pem())?,
            sa_public: write("sa.pub", &sa_key.public_key_pem())?,
            tokens: write("tokens.csv", &format!("{token},admin,admin-uid,\"system:masters\"\n"))?,
            token,
        })
    }
}

pub(crate) fn rand_u128() -> u128 {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).expect("random bytes");
    u128::from_le_bytes(bytes)
}
