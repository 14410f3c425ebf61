//! Where the archive is and how to reach it, with libpq's conventions: a
//! `postgres://` URL (`postgresql://` too), the password from the URL, else
//! `PGPASSWORD`, else the password file (`PGPASSFILE`, default `~/.pgpass`, ignored
//! unless only its owner can read it, as libpq does); `PGHOST`, `PGPORT`, `PGUSER`,
//! `PGDATABASE`, `PGSSLMODE` and `PGSSLROOTCERT` fill what the URL leaves out.
//!
//! TLS (rustls): `sslmode=disable` plain; `prefer` (libpq's default) and `allow`
//! TLS when the server offers it, unverified; `require` TLS, unverified unless a root
//! certificate file is given or `~/.postgresql/root.crt` exists (then as `verify-ca`,
//! as libpq does); `verify-ca` the chain against `sslrootcert`; `verify-full` the chain
//! and the host name. `sslrootcert=system` uses the system's bundle
//! (`SSL_CERT_FILE`, else `/etc/ssl/certs/ca-certificates.crt`).
//!
//! The password is never shown: [`Target`] displays as `postgres://user@host:port/db`,
//! and every error passes through [`Target::scrub`], which replaces the password
//! wherever it appears.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use postgres::config::{Host, SslMode};

use super::ArchiveError;

/// How long a connection attempt may take before it fails (the archive being down
/// must never hang a command or `skills serve`).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The `sslmode` asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ssl {
    /// No TLS.
    Disable,
    /// TLS when offered, unverified (`allow`, `prefer`).
    Prefer,
    /// TLS, unverified.
    Require,
    /// TLS, chain verified against the root certificates.
    VerifyCa,
    /// TLS, chain and host name verified.
    VerifyFull,
}

impl Ssl {
    /// The `sslmode` value that asks for this mode.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Disable => "disable",
            Self::Prefer => "prefer",
            Self::Require => "require",
            Self::VerifyCa => "verify-ca",
            Self::VerifyFull => "verify-full",
        }
    }

    fn parse(text: &str) -> Result<Self, String> {
        Ok(match text {
            "disable" => Self::Disable,
            "allow" | "prefer" => Self::Prefer,
            "require" => Self::Require,
            "verify-ca" => Self::VerifyCa,
            "verify-full" => Self::VerifyFull,
            other => {
                return Err(format!(
                    "sslmode `{other}`: expected disable, allow, prefer, require, verify-ca or \
                     verify-full"
                ))
            }
        })
    }
}

/// An archive's address, parsed and resolved (password, TLS), not yet connected.
#[derive(Clone)]
pub struct Target {
    config: postgres::Config,
    ssl: Ssl,
    root_cert: Option<PathBuf>,
    /// The password in use, kept only to scrub it from messages.
    secret: Option<String>,
    shown: String,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown)
    }
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown)
    }
}

/// Environment variables libpq reads, as a lookup (tests pass their own).
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The process environment, non-empty values only.
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

impl Target {
    /// Parses `url` with the process environment ([`Target::parse_with`]).
    ///
    /// # Errors
    /// As [`Target::parse_with`].
    pub fn parse(url: &str) -> Result<Self, ArchiveError> {
        Self::parse_with(url, &process_env)
    }

    /// Parses `url` (`postgres://[user[:password]@]host[:port][/database][?k=v&…]`)
    /// and resolves what it leaves out from `env` (libpq's variables) and the password
    /// file.
    ///
    /// # Errors
    /// [`ArchiveError`] saying what is wrong with the URL (never echoing it: it may
    /// hold the password), an unknown `sslmode`, or a root certificate file that is
    /// needed but cannot be read.
    pub fn parse_with(url: &str, env: Env<'_>) -> Result<Self, ArchiveError> {
        let url = url.trim();
        if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            return Err(ArchiveError::new(
                "the archive address must be a `postgres://` URL \
                 (postgres://user@host:5432/database)",
            ));
        }
        let (base, query) = url.split_once('?').unwrap_or((url, ""));
        let mut ssl = None;
        let mut root_cert = None;
        let mut passfile = None;
        let mut kept = Vec::new();
        for (k, v) in form_urlencoded::parse(query.as_bytes()) {
            match &*k {
                "sslmode" => ssl = Some(Ssl::parse(&v).map_err(ArchiveError::new)?),
                "sslrootcert" => root_cert = Some(v.into_owned()),
                "passfile" => passfile = Some(PathBuf::from(&*v)),
                "sslcert" | "sslkey" | "sslpassword" => {
                    return Err(ArchiveError::new(format!(
                        "`{k}` (client certificates) is not supported; use a password \
                         (PGPASSWORD or ~/.pgpass)"
                    )))
                }
                _ => kept.push((k.into_owned(), v.into_owned())),
            }
        }
        // The parser fills in 5432 for a host without a port, so PGPORT goes into the
        // URL before parsing, as libpq reads it: only when the URL names no port.
        let mut rebuilt = match env("PGPORT").and_then(|p| p.parse::<u16>().ok()) {
            Some(port) if !names_a_port(base, &kept) => with_port(base, port),
            _ => base.to_owned(),
        };
        if !kept.is_empty() {
            rebuilt.push('?');
            let mut ser = form_urlencoded::Serializer::new(String::new());
            for (k, v) in &kept {
                ser.append_pair(k, v);
            }
            rebuilt.push_str(&ser.finish());
        }
        // The parser's own message can quote the text; say only what it objected to.
        let mut config: postgres::Config = rebuilt.parse().map_err(|e: postgres::Error| {
            let why = e.to_string();
            let why = scrub_in(&why, url);
            ArchiveError::new(format!("the archive URL is not valid: {why}"))
        })?;
        if config.get_hosts().is_empty() {
            config.host(env("PGHOST").as_deref().unwrap_or("localhost"));
        }
        if config.get_user().is_none() {
            let user = env("PGUSER")
                .or_else(os_user)
                .unwrap_or_else(|| "postgres".into());
            config.user(&user);
        }
        if config.get_dbname().is_none() {
            let db = env("PGDATABASE")
                .or_else(|| config.get_user().map(str::to_owned))
                .unwrap_or_else(|| "postgres".into());
            config.dbname(&db);
        }
        if config.get_password().is_none() {
            let password = env("PGPASSWORD").or_else(|| {
                let file = passfile
                    .or_else(|| env("PGPASSFILE").map(PathBuf::from))
                    .or_else(|| dirs::home_dir().map(|h| h.join(".pgpass")))?;
                pgpass_lookup(&file, &config)
            });
            if let Some(p) = password {
                config.password(p);
            }
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        if config.get_application_name().is_none() {
            config.application_name("skills");
        }
        let ssl = match ssl {
            Some(s) => s,
            None => match env("PGSSLMODE") {
                Some(m) => Ssl::parse(&m).map_err(ArchiveError::new)?,
                None => Ssl::Prefer,
            },
        };
        let root_cert = root_cert.or_else(|| env("PGSSLROOTCERT")).map(|r| {
            if r == "system" {
                env("SSL_CERT_FILE").map_or_else(
                    || PathBuf::from("/etc/ssl/certs/ca-certificates.crt"),
                    PathBuf::from,
                )
            } else {
                PathBuf::from(r)
            }
        });
        let root_cert = root_cert.or_else(|| {
            let default = dirs::home_dir()?.join(".postgresql/root.crt");
            default.is_file().then_some(default)
        });
        let ssl = match (ssl, &root_cert) {
            (Ssl::Require, Some(_)) => Ssl::VerifyCa,
            (Ssl::VerifyCa | Ssl::VerifyFull, None) => {
                return Err(ArchiveError::new(
                    "sslmode verify-ca / verify-full needs the CA's certificate: \
                     add `sslrootcert=/path/to/ca.crt` to the URL (or set PGSSLROOTCERT, \
                     or put it at ~/.postgresql/root.crt; `sslrootcert=system` uses the \
                     system's certificates)",
                ))
            }
            (s, _) => s,
        };
        config.ssl_mode(match ssl {
            Ssl::Disable => SslMode::Disable,
            Ssl::Prefer => SslMode::Prefer,
            _ => SslMode::Require,
        });
        let shown = display_of(&config);
        let secret = config
            .get_password()
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .filter(|p| !p.is_empty());
        Ok(Self {
            config,
            ssl,
            root_cert,
            secret,
            shown,
        })
    }

    /// The address without the password: `postgres://user@host:port/database`.
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// The database name.
    pub fn database(&self) -> &str {
        self.config.get_dbname().unwrap_or("")
    }

    /// The user name connected as.
    pub fn user(&self) -> &str {
        self.config.get_user().unwrap_or("")
    }

    /// The TLS mode in force.
    pub fn ssl(&self) -> Ssl {
        self.ssl
    }

    /// The same server, user, password and TLS settings, naming database `name`
    /// (`skills verify --archive` makes one database per fixture corpus).
    #[must_use]
    pub fn with_database(&self, name: &str) -> Self {
        let mut out = self.clone();
        out.config.dbname(name);
        out.shown = display_of(&out.config);
        out
    }

    /// Gives a child `skills` process this archive through its environment rather than
    /// its command line: `SKILLS_ARCHIVE_URL` (the address without the password, with
    /// `sslmode` and `sslrootcert`) and, when there is one, `PGPASSWORD`.
    pub fn pass_to(&self, command: &mut std::process::Command) {
        let mut url = format!("{}?sslmode={}", self.shown, self.ssl.as_str());
        if let Some(root) = &self.root_cert {
            url.push_str("&sslrootcert=");
            url.extend(form_urlencoded::byte_serialize(
                root.to_string_lossy().as_bytes(),
            ));
        }
        command.env(crate::settings::ARCHIVE_URL.name, url);
        match &self.secret {
            Some(p) => command.env("PGPASSWORD", p),
            None => command.env_remove("PGPASSWORD"),
        };
    }

    /// `text` with the password replaced by `***` wherever it appears (also
    /// percent-encoded, as it may stand in a URL).
    pub fn scrub(&self, text: &str) -> String {
        match &self.secret {
            Some(p) => {
                // A URL may spell the password fully encoded or with RFC 3986's
                // unreserved marks (`-._~`) left as they are: scrub both.
                let every =
                    percent_encoding::utf8_percent_encode(p, percent_encoding::NON_ALPHANUMERIC)
                        .to_string();
                let unreserved =
                    percent_encoding::utf8_percent_encode(p, UNRESERVED_KEPT).to_string();
                text.replace(p.as_str(), "***")
                    .replace(&every, "***")
                    .replace(&unreserved, "***")
            }
            None => text.to_owned(),
        }
    }

    /// An error about this archive: `archive <shown>: <what>: <cause>`, scrubbed. A
    /// write refused because the server is read-only (SQLSTATE 25006 outside a
    /// transaction of ours declared `READ ONLY`: a hot standby) says where writes go.
    pub fn error(&self, what: &str, e: &postgres::Error) -> ArchiveError {
        let mut said = describe(e);
        if e.code() == Some(&postgres::error::SqlState::READ_ONLY_SQL_TRANSACTION) {
            said.push_str(
                "; this server is read-only (a hot standby or read replica answers \
                 searches and pages but takes no push or migrate): give the primary's URL",
            );
        }
        ArchiveError::new(self.scrub(&format!("archive {}: {what}: {said}", self.shown)))
    }

    /// Connects (with [`CONNECT_TIMEOUT`]).
    ///
    /// # Errors
    /// [`ArchiveError`] naming the archive (without its password) and PostgreSQL's or
    /// the network's reason.
    pub fn connect(&self) -> Result<postgres::Client, ArchiveError> {
        let result = match self.ssl {
            Ssl::Disable => self.config.connect(postgres::NoTls),
            _ => {
                let tls = self.tls_config()?;
                self.config
                    .connect(tokio_postgres_rustls::MakeRustlsConnect::new(tls))
            }
        };
        result.map_err(|e| {
            let err = self.error("cannot connect", &e);
            match certificate_error(&e).map(|c| self.tls_hint(c)) {
                Some(hint) => ArchiveError::new(format!("{}; hint: {hint}", err.message())),
                None => err,
            }
        })
    }

    /// What to do about certificate error `refused` of the TLS handshake.
    fn tls_hint(&self, refused: &rustls::CertificateError) -> String {
        use rustls::CertificateError as E;
        let root = self
            .root_cert
            .as_ref()
            .map_or_else(String::new, |r| format!(" (`{}`)", r.display()));
        match refused {
            E::UnknownIssuer => {
                format!("the server's certificate is not signed by a CA of `sslrootcert`{root}")
            }
            E::NotValidForName | E::NotValidForNameContext { .. } => {
                "`sslmode=verify-full` checks the URL's host name against the server's \
                 certificate: connect by a name the certificate holds, or use \
                 `sslmode=verify-ca` to check the chain only"
                    .into()
            }
            _ => format!("the server's certificate did not verify against `sslrootcert`{root}"),
        }
    }

    fn tls_config(&self) -> Result<rustls::ClientConfig, ArchiveError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| ArchiveError::new(format!("TLS setup: {e}")))?;
        let config = match (self.ssl, &self.root_cert) {
            (Ssl::VerifyCa | Ssl::VerifyFull, Some(file)) => {
                let roots = Arc::new(read_roots(file)?);
                let webpki = rustls::client::WebPkiServerVerifier::builder_with_provider(
                    roots,
                    provider.clone(),
                )
                .build()
                .map_err(|e| ArchiveError::new(format!("TLS setup: {e}")))?;
                let verifier: Arc<dyn rustls::client::danger::ServerCertVerifier> =
                    if self.ssl == Ssl::VerifyFull {
                        webpki
                    } else {
                        Arc::new(ChainOnly(webpki))
                    };
                builder
                    .dangerous()
                    .with_custom_certificate_verifier(verifier)
                    .with_no_client_auth()
            }
            _ => builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(Unverified(provider)))
                .with_no_client_auth(),
        };
        Ok(config)
    }
}

/// `postgres://user@host:port/database` of `config` (no password).
fn display_of(config: &postgres::Config) -> String {
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(h)) if h.contains(':') => format!("[{h}]"),
        Some(Host::Tcp(h)) => h.clone(),
        Some(Host::Unix(p)) => p.display().to_string(),
        None => "localhost".into(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    format!(
        "postgres://{}@{host}:{port}/{}",
        config.get_user().unwrap_or(""),
        config.get_dbname().unwrap_or("")
    )
}

/// `text` with any `user:password@` part of `url` hidden.
/// Percent-encoding that leaves RFC 3986's unreserved marks as they are.
const UNRESERVED_KEPT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// A URL without its query split around its host list:
/// (`postgres://user@`, `h1:5432,h2`, `/db`). No `://`: all of it is the hosts.
fn split_hosts(base: &str) -> (&str, &str, &str) {
    let after_scheme = base.find("://").map_or(0, |i| i + 3);
    let end = base[after_scheme..]
        .find('/')
        .map_or(base.len(), |i| after_scheme + i);
    let start = base[after_scheme..end]
        .rfind('@')
        .map_or(after_scheme, |i| after_scheme + i + 1);
    (&base[..start], &base[start..end], &base[end..])
}

/// Whether the URL without its query (`postgres://[user@]host[:port][,host[:port]]/db`)
/// or its query (`port=`) names a port.
fn names_a_port(base: &str, query: &[(String, String)]) -> bool {
    if query.iter().any(|(k, _)| k == "port") {
        return true;
    }
    split_hosts(base).1.split(',').any(|host| {
        // An IPv6 literal's colons are inside its brackets.
        let after = host.rsplit_once(']').map_or(host, |(_, a)| a);
        after.contains(':')
    })
}

/// `base` (a URL without its query and without ports) with `:port` after each host.
fn with_port(base: &str, port: u16) -> String {
    let (head, hosts, tail) = split_hosts(base);
    let hosts: Vec<String> = hosts
        .split(',')
        .map(|h| {
            if h.is_empty() {
                h.to_owned()
            } else {
                format!("{h}:{port}")
            }
        })
        .collect();
    format!("{head}{}{tail}", hosts.join(","))
}

fn scrub_in(text: &str, url: &str) -> String {
    let Some(rest) = url.split_once("://").map(|(_, r)| r) else {
        return text.to_owned();
    };
    let Some((auth, _)) = rest.split_once('@') else {
        return text.to_owned();
    };
    match auth.split_once(':') {
        Some((_, pw)) if !pw.is_empty() => text.replace(pw, "***"),
        _ => text.to_owned(),
    }
}

/// The certificate error the TLS handshake refused the server's certificate with,
/// found by its type in `e`'s causes (never by its text, which also holds the
/// archive's address); `None` for any other error.
fn certificate_error(e: &postgres::Error) -> Option<&rustls::CertificateError> {
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(cause) = next {
        if let Some(rustls::Error::InvalidCertificate(refused)) = cause.downcast_ref() {
            return Some(refused);
        }
        // An `io::Error`'s `source()` skips the error it wraps (rustls's, from the
        // handshake): look inside it.
        next = match cause
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::get_ref)
        {
            Some(inner) => Some(inner),
            None => cause.source(),
        };
    }
    None
}

/// PostgreSQL's own words for an error: the server's severity, message, detail and
/// hint, or the client's error and its causes.
pub fn describe(e: &postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        let mut s = format!("{}: {}", db.severity(), db.message());
        if let Some(d) = db.detail() {
            s.push_str(&format!(" ({d})"));
        }
        if let Some(h) = db.hint() {
            s.push_str(&format!(" hint: {h}"));
        }
        return s;
    }
    let mut s = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        s.push_str(": ");
        s.push_str(&cause.to_string());
        source = cause.source();
    }
    s
}

/// The operating system's name for the current user (`USER`, `LOGNAME`).
pub fn os_user() -> Option<String> {
    process_env("USER").or_else(|| process_env("LOGNAME"))
}

/// The password for `config`'s host, port, database and user in a libpq password file
/// (`host:port:database:user:password` lines, `*` matching anything, `\` escaping `:`
/// and `\`). A file that others may read is ignored, as libpq ignores it.
fn pgpass_lookup(file: &Path, config: &postgres::Config) -> Option<String> {
    let meta = std::fs::metadata(file).ok()?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if meta.permissions().mode() & 0o077 != 0 {
            eprintln!(
                "warning: password file {} has group or world access; it is ignored \
                 (permissions should be u=rw (0600) or less)",
                file.display()
            );
            return None;
        }
    }
    #[cfg(not(unix))]
    let _ = meta;
    let text = std::fs::read_to_string(file).ok()?;
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(h)) => h.clone(),
        _ => "localhost".into(),
    };
    let port = config
        .get_ports()
        .first()
        .copied()
        .unwrap_or(5432)
        .to_string();
    let want = [
        host.as_str(),
        port.as_str(),
        config.get_dbname().unwrap_or(""),
        config.get_user().unwrap_or(""),
    ];
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let fields = split_pgpass(line);
        if fields.len() < 5 {
            continue;
        }
        if fields[..4]
            .iter()
            .zip(want)
            .all(|(f, w)| f == "*" || f == w)
        {
            return Some(fields[4].clone());
        }
    }
    None
}

/// A password-file line's fields, `\:` and `\\` unescaped.
fn split_pgpass(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(n) = chars.next() {
                    if let Some(f) = fields.last_mut() {
                        f.push(n);
                    }
                }
            }
            ':' if fields.len() < 5 => fields.push(String::new()),
            c => {
                if let Some(f) = fields.last_mut() {
                    f.push(c);
                }
            }
        }
    }
    fields
}

/// Root certificates from a PEM file.
fn read_roots(file: &Path) -> Result<rustls::RootCertStore, ArchiveError> {
    use rustls::pki_types::{pem::PemObject, CertificateDer};
    let certs = CertificateDer::pem_file_iter(file)
        .map_err(|e| ArchiveError::new(format!("root certificate file {}: {e}", file.display())))?;
    let mut roots = rustls::RootCertStore::empty();
    for cert in certs {
        let cert = cert.map_err(|e| {
            ArchiveError::new(format!("root certificate file {}: {e}", file.display()))
        })?;
        roots.add(cert).map_err(|e| {
            ArchiveError::new(format!("root certificate file {}: {e}", file.display()))
        })?;
    }
    if roots.is_empty() {
        return Err(ArchiveError::new(format!(
            "root certificate file {} holds no certificate",
            file.display()
        )));
    }
    Ok(roots)
}

/// `sslmode=verify-ca`: the chain is verified, the host name is not.
#[derive(Debug)]
struct ChainOnly(Arc<rustls::client::WebPkiServerVerifier>);

impl rustls::client::danger::ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &rustls::pki_types::CertificateDer<'_>,
        intermediates: &[rustls::pki_types::CertificateDer<'_>],
        server_name: &rustls::pki_types::ServerName<'_>,
        ocsp: &[u8],
        now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
        {
            Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::NotValidForName
                | rustls::CertificateError::NotValidForNameContext { .. },
            )) => Ok(rustls::client::danger::ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// `sslmode=prefer` / `require` without a root certificate: encrypted, not
/// authenticated (what libpq does; `verify-full` is the mode that authenticates).
#[derive(Debug)]
struct Unverified(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for Unverified {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls::pki_types::CertificateDer<'_>,
        _intermediates: &[rustls::pki_types::CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn the_password_is_never_shown() {
        let t = Target::parse_with(
            "postgres://alice:s3cr%40t-pw@db.example:6543/team?sslmode=disable",
            &env_of(&[]),
        )
        .unwrap();
        assert_eq!(t.shown(), "postgres://alice@db.example:6543/team");
        assert_eq!(format!("{t}"), "postgres://alice@db.example:6543/team");
        assert_eq!(format!("{t:?}"), "postgres://alice@db.example:6543/team");
        assert_eq!(t.scrub("x s3cr@t-pw y s3cr%40t-pw"), "x *** y ***");
    }

    /// Another database on the same server keeps user, password and TLS; a child
    /// process gets the address without the password, and the password apart.
    #[test]
    fn another_database_and_a_child_process() {
        let t = Target::parse_with(
            "postgres://alice:s3cr%40t-pw@db.example:6543/team?sslmode=disable",
            &env_of(&[]),
        )
        .unwrap()
        .with_database("scratch_1");
        assert_eq!(t.shown(), "postgres://alice@db.example:6543/scratch_1");
        assert_eq!(t.database(), "scratch_1");
        assert_eq!(t.ssl(), Ssl::Disable);
        let mut c = std::process::Command::new("true");
        t.pass_to(&mut c);
        let env: std::collections::BTreeMap<_, _> = c
            .get_envs()
            .map(|(k, v)| {
                (
                    k.to_string_lossy().into_owned(),
                    v.map(|v| v.to_string_lossy().into_owned()),
                )
            })
            .collect();
        let url = env[crate::settings::ARCHIVE_URL.name].clone().unwrap();
        assert_eq!(
            url,
            "postgres://alice@db.example:6543/scratch_1?sslmode=disable"
        );
        assert_eq!(env["PGPASSWORD"].as_deref(), Some("s3cr@t-pw"));
        let again = Target::parse_with(&url, &env_of(&[("PGPASSWORD", "s3cr@t-pw")])).unwrap();
        assert_eq!((again.shown(), again.ssl()), (t.shown(), Ssl::Disable));
    }

    #[test]
    fn libpq_variables_fill_what_the_url_leaves_out() {
        let t = Target::parse_with(
            "postgres://db.example",
            &env_of(&[("PGUSER", "bob"), ("PGPORT", "7000"), ("PGPASSWORD", "pw1")]),
        )
        .unwrap();
        assert_eq!(t.shown(), "postgres://bob@db.example:7000/bob");
        assert_eq!(t.ssl(), Ssl::Prefer);
        assert_eq!(t.scrub("pw1"), "***");
    }

    #[test]
    fn a_port_in_the_url_wins_over_pgport() {
        let env = env_of(&[("PGPORT", "7000")]);
        let t = Target::parse_with("postgres://u@db.example:6543/d", &env).unwrap();
        assert_eq!(t.shown(), "postgres://u@db.example:6543/d");
        let t = Target::parse_with("postgres://u@[::1]/d", &env).unwrap();
        assert!(t.shown().ends_with(":7000/d"), "{}", t.shown());
        let t = Target::parse_with("postgres://u@[::1]:6543/d", &env).unwrap();
        assert!(t.shown().ends_with(":6543/d"), "{}", t.shown());
    }

    #[test]
    fn a_bad_url_is_refused_without_echoing_it() {
        let e = Target::parse_with("mysql://u:hunter2@h/db", &env_of(&[])).unwrap_err();
        assert!(!e.to_string().contains("hunter2"), "{e}");
        let e = Target::parse_with("postgres://u:hunter2@h/db?sslmode=bogus", &env_of(&[]))
            .unwrap_err();
        assert!(e.to_string().contains("sslmode"), "{e}");
        assert!(!e.to_string().contains("hunter2"), "{e}");
        let e = Target::parse_with("postgres://u:hunter2@h:notaport/db", &env_of(&[])).unwrap_err();
        assert!(!e.to_string().contains("hunter2"), "{e}");
        let e =
            Target::parse_with("postgres://h/db?sslmode=verify-full", &env_of(&[])).unwrap_err();
        assert!(e.to_string().contains("sslrootcert"), "{e}");
    }

    #[test]
    fn pgpass_lines_match_with_wildcards_and_escapes() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pgpass");
        std::fs::write(
            &file,
            "# comment\nother:5432:*:*:nope\ndb.example:*:team:alice:a\\:b\\\\c\n",
        )
        .unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        let f = file.display().to_string();
        let env = move |k: &str| (k == "PGPASSFILE").then(|| f.clone());
        let t = Target::parse_with("postgres://alice@db.example/team", &env).unwrap();
        assert_eq!(t.scrub("a:b\\c"), "***");
        let t = Target::parse_with("postgres://carol@db.example/team", &env).unwrap();
        assert_eq!(t.scrub("a:b\\c"), "a:b\\c", "no line for carol");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
            let t = Target::parse_with("postgres://alice@db.example/team", &env).unwrap();
            assert_eq!(
                t.scrub("a:b\\c"),
                "a:b\\c",
                "a world-readable file is ignored"
            );
        }
    }
}
