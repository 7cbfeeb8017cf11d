//! Helpers for the driver tests: the stand-in CLIs of `harness/fake-cli`
//! behind per-test wrappers (so no test changes the test process's
//! environment), a served simulator to act on, and reading its Nodes.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use drillbench_backend::clean::Registry;
use drillbench_backend::tool::Tools;
use drillbench_model::drill::Drill;
use drillbench_serve::{Clock, ServeOptions, Server};
use k8s_openapi::api::core::v1::Node;
use kube::api::Api;

pub const FAKES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/harness/fake-cli");

/// `dir/bin/<program>` running the stand-in with its log at
/// `dir/calls.log`, its state beside it, and the extra environment `env`.
pub fn wrapped(dir: &Path, program: &str, env: &[(&str, &str)]) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let log = dir.join("calls.log");
    let mut script = format!(
        "#!/bin/sh\nexport DRILLBENCH_FAKE_CLI_LOG='{}'\n",
        log.display()
    );
    for (name, value) in env {
        script.push_str(&format!("export {name}='{value}'\n"));
    }
    script.push_str(&format!("exec '{FAKES}/{program}' \"$@\"\n"));
    let path = bin.join(program);
    drillbench_model::test_support::write_script(&path, &script);
    path
}

/// The three stand-ins, wrapped alike.
pub fn tools(dir: &Path, env: &[(&str, &str)]) -> Tools {
    Tools {
        kind: wrapped(dir, "kind", env),
        talosctl: wrapped(dir, "talosctl", env),
        docker: wrapped(dir, "docker", env),
        timeout: Duration::from_secs(60),
    }
}

/// The call log, with the test's folder written as `$DIR`.
pub fn calls(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("calls.log"))
        .unwrap_or_default()
        .replace(&dir.display().to_string(), "$DIR")
}

/// The registry folder of a test.
pub fn registry(dir: &Path) -> Registry {
    Registry::new(dir.join("runs"))
}

/// The served cluster of `harness/serve/serve.yaml`: the production pools,
/// its clock moved only by the test.
pub fn serve_drill() -> Drill {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("harness/serve/serve.yaml");
    Drill::load(&path).unwrap_or_else(|d| panic!("{}", d.render(false)))
}

/// Starts the simulator behind its API on a free loopback port.
pub fn serve(drill: &Drill) -> Server {
    Server::start(
        drill,
        &ServeOptions {
            listen: "127.0.0.1:0".parse().unwrap(),
            kubeconfig_out: None,
            clock: Clock::Step,
            seed: 7,
            history_window: drillbench_serve::state::DEFAULT_HISTORY_WINDOW,
            standby_nodes: None,
            limits: Default::default(),
        },
    )
    .expect("the server starts")
}

/// A blocking view of the served cluster, on a runtime of its own.
pub struct Served {
    runtime: tokio::runtime::Runtime,
    client: kube::Client,
}

impl Served {
    pub fn new(server: &Server) -> Self {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let config = server.client_config();
        let client = runtime.block_on(async { kube::Client::try_from(config).unwrap() });
        Self { runtime, client }
    }

    /// The Node, or `None` when it is gone.
    pub fn node(&self, name: &str) -> Option<Node> {
        let api: Api<Node> = Api::all(self.client.clone());
        self.runtime
            .block_on(api.get_opt(name))
            .expect("the API answers")
    }

    /// The status of the node's Ready condition.
    pub fn ready(&self, name: &str) -> Option<String> {
        self.node(name)?
            .status?
            .conditions?
            .into_iter()
            .find(|c| c.type_ == "Ready")
            .map(|c| c.status)
    }

    /// Moves the simulator's clock.
    pub fn advance(&self, by: &str) {
        let request = http::Request::post(format!("/bench/v1/advance?by={by}"))
            .body(Vec::new())
            .unwrap();
        self.runtime
            .block_on(self.client.request_text(request))
            .expect("advance");
    }
}
