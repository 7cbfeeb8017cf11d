//! An assertion as the runner and the judges see it: a name and exactly
//! one kind. The file format keeps one optional field per kind (the shape
//! users write, `- name: x` beside `rto: {…}`, which serde can only read
//! as a struct without `flatten`); validation proves exactly one is set,
//! and [`Assertion::lower`] turns that into an enum, so a new kind is a new
//! variant and the compiler lists every place that must judge it.

use super::located::Located;
use super::spec::{
    AblationControl, AdmissionControl, AssertionSpec, AvailabilityAssertion, BurstAssertion,
    GuardSpec, PlacementAssertion, PodMatch, QuorumAssertion, RpoAssertion, RtoAssertion,
    WeakenControl,
};

/// A validated assertion.
#[derive(Debug, Clone)]
pub struct Assertion {
    /// As reports and negative controls refer to it.
    pub name: String,
    /// The one thing it judges.
    pub kind: AssertionKind,
}

/// What an assertion judges; the payloads are the file's own typed parts.
/// Each variant is the file key of the same name, documented there.
#[derive(Debug, Clone)]
pub enum AssertionKind {
    Rto(RtoAssertion),
    Rpo(RpoAssertion),
    Availability(AvailabilityAssertion),
    Placement(PlacementAssertion),
    Quorum(QuorumAssertion),
    PdbRespected,
    BurstUnchanged(BurstAssertion),
    NoStrandedVolumes,
    EndpointUnchanged,
    MemberPromoted,
    NoStrandedNodes,
    NegativeControl(Control),
}

/// A negative control: the proof that a guard or an assertion bites.
#[derive(Debug, Clone)]
pub enum Control {
    /// A planted object that breaks a guard must be refused at admission.
    Admission(AdmissionControl),
    /// The same drill and seed with a guard weakened must fail the named
    /// assertions.
    Ablation(AblationControl),
    /// The same drill and seed with a safeguard of the procedure taken
    /// away must fail the named assertions, or be refused by the preflight.
    Weaken(WeakenControl),
}

impl AssertionKind {
    /// The kind as the drill language spells its key, and as reports name it.
    pub fn name(&self) -> &'static str {
        match self {
            AssertionKind::Rto(_) => "rto",
            AssertionKind::Rpo(_) => "rpo",
            AssertionKind::Availability(_) => "availability",
            AssertionKind::Placement(_) => "placement",
            AssertionKind::Quorum(_) => "quorum",
            AssertionKind::PdbRespected => "pdbRespected",
            AssertionKind::BurstUnchanged(_) => "burstUnchanged",
            AssertionKind::NoStrandedVolumes => "noStrandedVolumes",
            AssertionKind::EndpointUnchanged => "endpointUnchanged",
            AssertionKind::MemberPromoted => "memberPromoted",
            AssertionKind::NoStrandedNodes => "noStrandedNodes",
            AssertionKind::NegativeControl(_) => "negativeControl",
        }
    }
}

impl AssertionSpec {
    /// The kinds the written assertion sets, as the language spells them,
    /// in the language's order. The destructuring is exhaustive, so a new
    /// kind in the file format cannot be left out here.
    pub(crate) fn kind_names(&self) -> Vec<&'static str> {
        let AssertionSpec {
            name: _,
            rto,
            rpo,
            availability,
            placement,
            quorum,
            pdb_respected,
            burst_unchanged,
            no_stranded_volumes,
            endpoint_unchanged,
            member_promoted,
            no_stranded_nodes,
            negative_control,
        } = self;
        [
            (rto.is_some(), "rto"),
            (rpo.is_some(), "rpo"),
            (availability.is_some(), "availability"),
            (placement.is_some(), "placement"),
            (quorum.is_some(), "quorum"),
            (pdb_respected.is_some(), "pdbRespected"),
            (burst_unchanged.is_some(), "burstUnchanged"),
            (no_stranded_volumes.is_some(), "noStrandedVolumes"),
            (endpoint_unchanged.is_some(), "endpointUnchanged"),
            (member_promoted.is_some(), "memberPromoted"),
            (no_stranded_nodes.is_some(), "noStrandedNodes"),
            (negative_control.is_some(), "negativeControl"),
        ]
        .into_iter()
        .filter_map(|(set, name)| set.then_some(name))
        .collect()
    }
}

impl Assertion {
    /// The typed assertion of a written one that sets exactly one kind (and,
    /// for a negative control, exactly one form), as validation requires;
    /// `None` otherwise.
    pub fn lower(spec: &AssertionSpec) -> Option<Assertion> {
        if spec.kind_names().len() != 1 {
            return None;
        }
        let kind = if let Some(r) = &spec.rto {
            AssertionKind::Rto(r.clone())
        } else if let Some(r) = &spec.rpo {
            AssertionKind::Rpo(r.clone())
        } else if let Some(a) = &spec.availability {
            AssertionKind::Availability(a.clone())
        } else if let Some(p) = &spec.placement {
            AssertionKind::Placement(p.clone())
        } else if let Some(q) = &spec.quorum {
            AssertionKind::Quorum(q.clone())
        } else if spec.pdb_respected.is_some() {
            AssertionKind::PdbRespected
        } else if let Some(b) = &spec.burst_unchanged {
            AssertionKind::BurstUnchanged(b.clone())
        } else if spec.no_stranded_volumes.is_some() {
            AssertionKind::NoStrandedVolumes
        } else if spec.endpoint_unchanged.is_some() {
            AssertionKind::EndpointUnchanged
        } else if spec.member_promoted.is_some() {
            AssertionKind::MemberPromoted
        } else if spec.no_stranded_nodes.is_some() {
            AssertionKind::NoStrandedNodes
        } else {
            let control = spec.negative_control.as_ref()?;
            AssertionKind::NegativeControl(
                match (&control.admission, &control.ablation, &control.weaken) {
                    (Some(admission), None, None) => Control::Admission(admission.clone()),
                    (None, Some(ablation), None) => Control::Ablation(ablation.clone()),
                    (None, None, Some(weaken)) => Control::Weaken(weaken.clone()),
                    _ => return None,
                },
            )
        };
        Some(Assertion {
            name: spec.name.value.clone(),
            kind,
        })
    }
}

/// The real assertions no negative control can make fail: nothing shows
/// they can go red on this drill, so a green verdict may be vacuous.
///
/// A weakening or an ablation covers the assertions its `mustFail` names.
/// An admission control covers every placement assertion its guard
/// enforces ([`guard_enforces`]): the object it plants is one that
/// assertion exists to keep off its nodes, and the control passes only if
/// the guard refuses it.
pub fn uncontrolled<'a>(
    assertions: &'a [Assertion],
    guards: &[Located<GuardSpec>],
) -> Vec<&'a str> {
    let named: Vec<&str> = assertions
        .iter()
        .filter_map(|a| match &a.kind {
            AssertionKind::NegativeControl(Control::Ablation(c)) => Some(&c.must_fail),
            AssertionKind::NegativeControl(Control::Weaken(c)) => Some(&c.must_fail),
            _ => None,
        })
        .flatten()
        .map(|m| m.as_str())
        .collect();
    let admitted_guards: Vec<&GuardSpec> = assertions
        .iter()
        .filter_map(|a| match &a.kind {
            AssertionKind::NegativeControl(Control::Admission(c)) => guards
                .iter()
                .find(|g| g.name.as_str() == c.guard.as_str())
                .map(|g| &g.value),
            _ => None,
        })
        .collect();
    assertions
        .iter()
        .filter(|a| match &a.kind {
            AssertionKind::NegativeControl(_) => false,
            AssertionKind::Placement(p) => {
                !named.contains(&a.name.as_str())
                    && !admitted_guards.iter().any(|g| guard_enforces(g, p))
            }
            _ => !named.contains(&a.name.as_str()),
        })
        .map(|a| a.name.as_str())
        .collect()
}

/// Whether a guard enforces a placement assertion: it refuses pods the
/// assertion selects (every pod it matches is one the assertion selects)
/// unless they require one of the nodes the assertion allows (its
/// requirement is one of the assertion's). An `Audit` guard refuses
/// nothing, so it enforces nothing.
pub fn guard_enforces(guard: &GuardSpec, placement: &PlacementAssertion) -> bool {
    guard.action == super::spec::GuardAction::Enforce
        && placement
            .nodes
            .iter()
            .any(|n| n.value == guard.require.node_affinity.value)
        && within(&guard.matches, &placement.pods)
}

/// Whether every pod `inner` matches is one `outer` matches: each
/// condition `outer` sets, `inner` sets at least as narrowly.
fn within(inner: &PodMatch, outer: &PodMatch) -> bool {
    let same = |a: &Option<Located<String>>, b: &Option<Located<String>>| match b {
        None => true,
        Some(b) => a.as_ref().is_some_and(|a| a.value == b.value),
    };
    let namespaces = match (&inner.namespaces, &outer.namespaces) {
        (_, None) => true,
        (None, Some(_)) => false,
        (Some(i), Some(o)) => i.iter().all(|n| o.contains(n)),
    };
    let labels = match (&inner.labels, &outer.labels) {
        (_, None) => true,
        (None, Some(o)) => o.is_empty(),
        (Some(i), Some(o)) => o.iter().all(|(k, v)| i.get(k) == Some(v)),
    };
    same(&inner.mounts_claim_of_class, &outer.mounts_claim_of_class)
        && same(
            &inner.mounts_no_claim_of_class,
            &outer.mounts_no_claim_of_class,
        )
        && namespaces
        && labels
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(yaml: &str) -> AssertionSpec {
        serde_saphyr::from_str(yaml).expect("an assertion")
    }

    #[test]
    fn one_kind_lowers_to_its_variant_and_two_lower_to_nothing() {
        let quorum = Assertion::lower(&spec("name: q\nquorum: {}\n")).expect("one kind");
        assert_eq!(quorum.name, "q");
        assert_eq!(quorum.kind.name(), "quorum");
        let both = spec("name: q\nquorum: {}\npdbRespected: {}\n");
        assert_eq!(both.kind_names(), ["quorum", "pdbRespected"]);
        assert!(Assertion::lower(&both).is_none());
        assert!(Assertion::lower(&spec("name: q\n")).is_none());
    }

    /// Each key of the language, set alone, with the smallest payload.
    const ONE_OF_EACH: [&str; 12] = [
        "rto: {of: api, within: 1m}",
        "rpo: {schedule: daily, within: 1h}",
        "availability: {of: api, atLeast: 0.9}",
        "placement: {pods: {}, nodes: []}",
        "quorum: {}",
        "pdbRespected: {}",
        "burstUnchanged: {pods: {}, pools: []}",
        "noStrandedVolumes: {}",
        "endpointUnchanged: {}",
        "memberPromoted: {}",
        "noStrandedNodes: {}",
        "negativeControl: {admission: {guard: g, object: {kind: Pod}}}",
    ];

    #[test]
    fn every_kind_is_listed_and_lowers_to_the_variant_of_its_name() {
        let all = format!("name: every\n{}\n", ONE_OF_EACH.join("\n"));
        assert_eq!(
            spec(&all).kind_names(),
            super::super::check::ASSERTION_KINDS
        );
        for (line, listed) in ONE_OF_EACH.iter().zip(super::super::check::ASSERTION_KINDS) {
            let lowered = Assertion::lower(&spec(&format!("name: one\n{line}\n")))
                .unwrap_or_else(|| panic!("{line} lowers"));
            assert_eq!(lowered.kind.name(), listed, "{line}");
        }
    }

    #[test]
    fn an_assertion_no_control_names_is_uncontrolled() {
        let lowered = |yaml: &str| Assertion::lower(&spec(yaml)).expect("one kind");
        let assertions = [
            lowered("name: q\nquorum: {}\n"),
            lowered("name: e\nendpointUnchanged: {}\n"),
            lowered(
                "name: c\nnegativeControl:\n  weaken: {change: endpointWithoutFailover, mustFail: [q]}\n",
            ),
        ];
        assert_eq!(uncontrolled(&assertions, &[]), ["e"]);
        assert!(
            uncontrolled(&assertions[..1], &[]) == ["q"],
            "no control, no proof"
        );
    }

    fn guard(yaml: &str) -> Located<GuardSpec> {
        Located::at(
            serde_saphyr::from_str(yaml).expect("a guard"),
            super::super::located::Position::UNKNOWN,
        )
    }

    const BASELINE: &str = "{key: baseline, operator: In, values: [\"true\"]}";

    /// An admission control proves the placement its guard enforces, and
    /// nothing else: not an assertion on other pods or other nodes.
    #[test]
    fn an_admission_control_covers_the_placement_its_guard_enforces() {
        let lowered = |yaml: &str| Assertion::lower(&spec(yaml)).expect("one kind");
        let placement = |name: &str, pods: &str, nodes: &str| {
            lowered(&format!(
                "name: {name}\nplacement: {{pods: {pods}, nodes: [{nodes}]}}\n"
            ))
        };
        let assertions = [
            placement(
                "hcloud-on-baseline",
                "{mountsClaimOfClass: hcloud}",
                BASELINE,
            ),
            placement(
                "longhorn-on-baseline",
                "{mountsClaimOfClass: longhorn}",
                BASELINE,
            ),
            placement(
                "hcloud-elsewhere",
                "{mountsClaimOfClass: hcloud}",
                "{key: zone, operator: Exists}",
            ),
            placement(
                "hcloud-in-apps",
                "{mountsClaimOfClass: hcloud, namespaces: [apps]}",
                BASELINE,
            ),
            lowered("name: pdbs\npdbRespected: {}\n"),
            lowered(
                "name: refused\nnegativeControl:\n  admission: {guard: g, object: {kind: Pod}}\n",
            ),
        ];
        let enforcing = guard(&format!(
            "name: g\naction: Enforce\nmatch: {{mountsClaimOfClass: hcloud, namespaces: [openbao]}}\nrequire: {{nodeAffinity: {BASELINE}}}\n"
        ));
        // Covered: the guard's pods (hcloud consumers in openbao) are among
        // the assertion's, and it requires the node the assertion allows.
        assert_eq!(
            uncontrolled(&assertions, std::slice::from_ref(&enforcing)),
            [
                "longhorn-on-baseline",
                "hcloud-elsewhere",
                "hcloud-in-apps",
                "pdbs"
            ]
        );
        // The same control with no such guard, or an auditing one, covers nothing.
        assert_eq!(uncontrolled(&assertions, &[]).len(), 5);
        let audit = guard(&format!(
            "name: g\naction: Audit\nmatch: {{mountsClaimOfClass: hcloud}}\nrequire: {{nodeAffinity: {BASELINE}}}\n"
        ));
        assert_eq!(uncontrolled(&assertions, &[audit]).len(), 5);
    }

    #[test]
    fn a_negative_control_lowers_only_with_exactly_one_form() {
        let admission = "name: c\nnegativeControl:\n  admission: {guard: g, object: {kind: Pod}}\n";
        let lowered = Assertion::lower(&spec(admission)).expect("one form");
        assert!(matches!(
            lowered.kind,
            AssertionKind::NegativeControl(Control::Admission(_))
        ));
        let formless = spec("name: c\nnegativeControl: {}\n");
        assert_eq!(formless.kind_names(), ["negativeControl"], "still one kind");
        assert!(Assertion::lower(&formless).is_none());
    }
}
