//! The bearer token every request must carry.
//!
//! The façade listens on loopback, which every program of the machine can
//! reach — a web page open in a local browser included: a "simple" POST
//! (`Content-Type: text/plain`) goes out without a CORS preflight. A
//! request with an `Authorization` header is never simple, so a page can
//! send one only after a preflight this server never grants; and only a
//! client that read the kubeconfig (written readable by its owner alone)
//! knows the token.
//!
//! A client presents it as a bearer token, or as the first segment of the
//! path: kubectl (client-go) sends a kubeconfig's credentials over TLS only
//! and never over plain HTTP (kubernetes/kubectl#744), so the kubeconfig's
//! server URL carries it too (`http://127.0.0.1:PORT/TOKEN`), and
//! client-go puts that prefix before every path it requests.

use hyper::header::HeaderValue;

/// A random token, written into the kubeconfig and required on every request.
#[derive(Clone)]
pub struct Token(String);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(..)")
    }
}

impl Token {
    /// 32 bytes from the operating system's generator, as hex.
    pub fn random() -> Result<Token, std::io::Error> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|e| std::io::Error::other(e.to_string()))?;
        Ok(Token(bytes.iter().map(|b| format!("{b:02x}")).collect()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The path to serve when the request carries this token: the rest
    /// of the path after a first segment that is the token (a client
    /// may send the bearer token too, as kube-rs does), else the path as
    /// given with a bearer token; `None` without the token.
    pub(crate) fn admit<'p>(
        &self,
        authorization: Option<&HeaderValue>,
        path: &'p str,
    ) -> Option<&'p str> {
        if let Some(rest) = path.strip_prefix('/') {
            let (first, rest) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            if self.is(first.as_bytes()) {
                return Some(if rest.is_empty() { "/" } else { rest });
            }
        }
        let bearer = authorization
            .map(HeaderValue::as_bytes)
            .and_then(|h| h.strip_prefix(b"Bearer "));
        bearer.is_some_and(|given| self.is(given)).then_some(path)
    }

    /// Whether `given` is the token. The comparison takes the same time
    /// wherever the first difference is, so timing tells a local attacker
    /// nothing.
    fn is(&self, given: &[u8]) -> bool {
        let expected = self.0.as_bytes();
        if given.len() != expected.len() {
            return false;
        }
        given
            .iter()
            .zip(expected)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_bearer_token_is_admitted() {
        let token = Token::random().expect("randomness");
        assert_eq!(token.as_str().len(), 64);
        let header = |s: &str| HeaderValue::from_str(s).expect("header");
        let admits = |h: &str| token.admit(Some(&header(h)), "/api").is_some();
        assert!(admits(&format!("Bearer {}", token.as_str())));
        assert!(token.admit(None, "/api").is_none());
        assert!(!admits(token.as_str()), "no scheme");
        assert!(!admits(&format!("Basic {}", token.as_str())));
        let mut other = token.as_str().to_owned();
        other.replace_range(63.., if other.ends_with('0') { "1" } else { "0" });
        assert!(!admits(&format!("Bearer {other}")));
        assert!(!admits(&format!("Bearer {}x", token.as_str())));
        assert_ne!(
            Token::random().expect("randomness").as_str(),
            token.as_str(),
            "every server has its own"
        );
    }

    #[test]
    fn the_token_as_the_first_path_segment_is_stripped_off() {
        let token = Token::random().expect("randomness");
        let t = token.as_str();
        assert_eq!(
            token.admit(None, &format!("/{t}/api/v1/pods")),
            Some("/api/v1/pods")
        );
        assert_eq!(token.admit(None, &format!("/{t}")), Some("/"));
        assert_eq!(token.admit(None, &format!("/{t}x/api")), None);
        assert_eq!(
            token.admit(None, &format!("/api/{t}")),
            None,
            "only the first segment"
        );
        assert_eq!(token.admit(None, "/"), None);
        let bearer = HeaderValue::from_str(&format!("Bearer {t}")).expect("header");
        assert_eq!(
            token.admit(Some(&bearer), "/api"),
            Some("/api"),
            "with a bearer token the path is the path"
        );
        assert_eq!(
            token.admit(Some(&bearer), &format!("/{t}/api")),
            Some("/api"),
            "both at once"
        );
    }
}
