//! Serving a drill to the real `kubectl`: the served cluster, a kubeconfig
//! for it, and kubectl run as a child process with a deadline.
use crate::common;

use std::fs::File;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use drillbench_model::drill::Drill;
use drillbench_serve::{Clock, ServeOptions, Server};

pub(crate) const DEADLINE: Duration = Duration::from_secs(90);

/// A served drill and a kubeconfig for it.
pub(crate) struct Served {
    pub(crate) server: Server,
    pub(crate) dir: tempfile::TempDir,
    pub(crate) kubeconfig: PathBuf,
}

/// The serve drill, served; `None` (the test skips) without kubectl.
pub(crate) fn serve() -> Option<Served> {
    serve_drill("harness/serve/serve.yaml")
}

/// A drill of the repository (a path under its root), served.
pub(crate) fn serve_drill(path: &str) -> Option<Served> {
    if !common::tool_or_skip(
        "kubectl",
        &["version", "--client"],
        "these tests drive the real kubectl; `.ci/run` installs Debian's `kubernetes-client`",
    ) {
        return None;
    }
    let drill =
        Drill::load(&common::root().join(path)).unwrap_or_else(|d| panic!("{}", d.render(false)));
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    let server = Server::start(
        &drill,
        &ServeOptions {
            listen: "127.0.0.1:0".parse().expect("address"),
            kubeconfig_out: Some(kubeconfig.clone()),
            clock: Clock::Step,
            seed: 1,
            history_window: drillbench_serve::state::DEFAULT_HISTORY_WINDOW,
            standby_nodes: None,
            limits: Default::default(),
        },
    )
    .expect("the server starts");
    let served = Served {
        server,
        dir,
        kubeconfig,
    };
    // Let every workload come up before the test pokes the cluster.
    served.advance("2m");
    Some(served)
}

/// What a finished kubectl printed.
pub(crate) struct Out {
    pub(crate) ok: bool,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Served {
    pub(crate) fn post(&self, path_and_query: &str) -> String {
        let mut stream = TcpStream::connect(self.server.addr()).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .expect("timeout");
        write!(
            stream,
            "POST {path_and_query} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            self.server.token().as_str()
        )
        .expect("write");
        let mut response = String::new();
        stream.read_to_string(&mut response).expect("read");
        assert!(
            response.starts_with("HTTP/1.1 200"),
            "POST {path_and_query}: {response}"
        );
        response
    }

    pub(crate) fn advance(&self, by: &str) {
        self.post(&format!("/bench/v1/advance?by={by}"));
    }

    pub(crate) fn spawn(&self, args: &[&str], name: &str) -> (Child, PathBuf, PathBuf) {
        let out = self.dir.path().join(format!("{name}.out"));
        let err = self.dir.path().join(format!("{name}.err"));
        let child = Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--request-timeout=30s")
            .args(args)
            .stdin(Stdio::null())
            .stdout(File::create(&out).expect("stdout file"))
            .stderr(File::create(&err).expect("stderr file"))
            .spawn()
            .expect("kubectl starts");
        (child, out, err)
    }

    /// Runs kubectl to the end; `tick` runs while it has not finished
    /// (to advance virtual time for commands that wait on the cluster).
    pub(crate) fn run_with(&self, args: &[&str], mut tick: impl FnMut()) -> Out {
        let (mut child, out, err) = self.spawn(args, "run");
        let start = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait") {
                break status;
            }
            if start.elapsed() > DEADLINE {
                let _ = child.kill();
                let _ = child.wait();
                panic!("kubectl {args:?} did not finish within {DEADLINE:?}");
            }
            tick();
            std::thread::sleep(Duration::from_millis(100));
        };
        Out {
            ok: status.success(),
            stdout: read(&out),
            stderr: read(&err),
        }
    }

    pub(crate) fn run(&self, args: &[&str]) -> Out {
        self.run_with(args, || {})
    }

    pub(crate) fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            out.ok,
            "kubectl {args:?} failed: {}{}",
            out.stdout, out.stderr
        );
        out.stdout
    }
}

pub(crate) fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

pub(crate) fn node_of(s: &Served, selector: &str) -> String {
    s.ok(&[
        "get",
        "pods",
        "-n",
        "apps",
        "-l",
        selector,
        "-o",
        "jsonpath={.items[0].spec.nodeName}",
    ])
}

/// Writes a manifest beside the kubeconfig for `kubectl create -f`, which
/// sends it as JSON.
pub(crate) fn manifest(s: &Served, name: &str, text: &str) -> String {
    let path = s.dir.path().join(format!("{name}.yaml"));
    std::fs::write(&path, text).expect("write manifest");
    path.display().to_string()
}

pub(crate) fn config_map(s: &Served, name: &str) -> String {
    manifest(
        s,
        name,
        &format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: apps}}\ndata: {{seq: \"1\"}}\n"
        ),
    )
}
