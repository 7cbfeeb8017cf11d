//! A kubeconfig's cluster as a client, directly or through the bench's
//! stable endpoint, and what can be read of it without connecting.

use std::net::SocketAddr;
use std::path::Path;

use super::KubeError;
use super::access;

async fn config_for(path: &Path, context: Option<&str>) -> Result<kube::Config, KubeError> {
    let kubeconfig =
        kube::config::Kubeconfig::read_from(path).map_err(|source| KubeError::Kubeconfig {
            path: path.to_path_buf(),
            source,
        })?;
    let options = kube::config::KubeConfigOptions {
        context: context.map(str::to_owned),
        ..Default::default()
    };
    kube::Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .map_err(|source| KubeError::Kubeconfig {
            path: path.to_path_buf(),
            source,
        })
}

/// Points a config at the proxy's address: same scheme and credentials;
/// the server certificate is still checked against the name it was issued
/// for.
fn through_proxy(mut config: kube::Config, addr: SocketAddr) -> Result<kube::Config, KubeError> {
    let original = config.cluster_url.clone();
    if config.tls_server_name.is_none()
        && let Some(host) = original.host()
        && host.parse::<std::net::IpAddr>().is_err()
    {
        config.tls_server_name = Some(host.to_owned());
    }
    let scheme = original.scheme_str().unwrap_or("https");
    config.cluster_url = format!("{scheme}://{addr}")
        .parse()
        .map_err(|e: http::uri::InvalidUri| KubeError::Url(e.to_string()))?;
    Ok(config)
}

/// A client for a kubeconfig's context, through the stable endpoint at
/// `through` when the bench holds one.
pub(super) async fn client_for(
    path: &Path,
    context: Option<&str>,
    through: Option<SocketAddr>,
) -> Result<kube::Client, KubeError> {
    let mut config = config_for(path, context).await?;
    // A drain must see each 429 itself to retry on its own schedule.
    config.default_retry = false;
    if let Some(addr) = through {
        config = through_proxy(config, addr)?;
    }
    kube::Client::try_from(config).map_err(KubeError::Client)
}

/// The API server URL of a kubeconfig's context.
pub async fn server_of(path: &Path, context: Option<&str>) -> Option<String> {
    server_and_token_of(path, context)
        .await
        .map(|(server, _)| server)
}

/// The API server URL of a kubeconfig's context and the bearer token its
/// user presents, if any (a served simulator requires one).
pub async fn server_and_token_of(
    path: &Path,
    context: Option<&str>,
) -> Option<(String, Option<String>)> {
    use secrecy::ExposeSecret;
    let config = config_for(path, context).await.ok()?;
    let token = config
        .auth_info
        .token
        .as_ref()
        .map(|t| t.expose_secret().to_owned());
    Some((
        config
            .cluster_url
            .to_string()
            .trim_end_matches('/')
            .to_owned(),
        token,
    ))
}

/// The name of the context a kubeconfig uses (`--context`, else its
/// current context).
pub fn context_name(path: &Path, context: Option<&str>) -> Option<String> {
    match context {
        Some(c) => Some(c.to_owned()),
        None => {
            kube::config::Kubeconfig::read_from(path)
                .ok()?
                .current_context
        }
    }
}

/// Reads the bench's run label from the cluster a kubeconfig reaches.
pub fn read_run_label(path: &Path, context: Option<&str>) -> Result<Option<String>, KubeError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(KubeError::Runtime)?;
    runtime.block_on(async {
        let client = client_for(path, context, None).await?;
        access::run_label(&client)
            .await
            .map_err(|source| KubeError::Api {
                what: "read the bench's run label from kube-system and the nodes".to_owned(),
                source,
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const KUBECONFIG: &str = "apiVersion: v1
kind: Config
current-context: kind
clusters:
- name: kind
  cluster:
    server: https://kind.example:6443/
- name: other
  cluster:
    server: https://10.0.0.7:6443
contexts:
- name: kind
  context: {cluster: kind, user: u}
- name: other
  context: {cluster: other, user: u}
users:
- name: u
  user: {token: t}
";

    fn kubeconfig() -> tempfile::NamedTempFile {
        let file = tempfile::NamedTempFile::new().expect("temp file");
        std::fs::write(file.path(), KUBECONFIG).expect("write");
        file
    }

    #[tokio::test]
    async fn the_server_and_context_are_read_without_connecting() {
        let file = kubeconfig();
        assert_eq!(
            server_of(file.path(), None).await.as_deref(),
            Some("https://kind.example:6443")
        );
        assert_eq!(
            server_of(file.path(), Some("other")).await.as_deref(),
            Some("https://10.0.0.7:6443")
        );
        assert_eq!(server_of(file.path(), Some("missing")).await, None);
        assert_eq!(context_name(file.path(), None).as_deref(), Some("kind"));
        assert_eq!(
            context_name(file.path(), Some("other")).as_deref(),
            Some("other")
        );
        assert_eq!(context_name(Path::new("/nonexistent"), None), None);
    }

    #[tokio::test]
    async fn through_the_proxy_the_address_changes_and_the_certificate_name_stays() {
        let file = kubeconfig();
        let proxy: SocketAddr = ([127, 0, 0, 1], 7443).into();
        let named = config_for(file.path(), None).await.expect("config");
        let named = through_proxy(named, proxy).expect("proxied");
        assert_eq!(named.cluster_url.to_string(), "https://127.0.0.1:7443/");
        assert_eq!(named.tls_server_name.as_deref(), Some("kind.example"));
        // A certificate issued for an IP is checked against the IP SANs.
        let by_ip = config_for(file.path(), Some("other"))
            .await
            .expect("config");
        let by_ip = through_proxy(by_ip, proxy).expect("proxied");
        assert_eq!(by_ip.tls_server_name, None);
        let missing = config_for(Path::new("/nonexistent"), None).await;
        assert!(matches!(missing, Err(KubeError::Kubeconfig { .. })));
    }
}
