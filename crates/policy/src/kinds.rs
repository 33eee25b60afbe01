//! Per kind lint reads: the CEL that decides each enforced rule, with the
//! same facts lint's `kinds` module gives its rules (the pod, the main and
//! the engine container, the rollout after upstream rounding; for an
//! InferaDeployment what the operator of the generation renders).
//!
//! Each [`Check`] is the condition under which lint reports the rule at
//! that severity, after lint's one-root-cause filtering (a rule another
//! rule's finding silences is silenced here too) and its suppression
//! annotation.

use infera_lint::finding::Severity;
use infera_model::api::{INFERA_DEPLOYMENT, LEADER_WORKER_SET};
use infera_model::catalogue::INFERA;
use infera_model::generation::Generation;
use infera_model::lws;
use infera_model::operator::DEFAULT_WORKER_PORT;
use infera_model::worker::READY_PATH;

use crate::cel::{self, UNKNOWN_COUNT, lit};

/// The annotation lint's suppression reads (`IR001,IR011`, `IR001/prefill`).
pub const LINT_IGNORE_ANNOTATION: &str = infera_lint::runner::LINT_IGNORE_ANNOTATION;

/// The condition under which lint reports `code` at `severity`.
#[derive(Debug, Clone)]
pub struct Check {
    pub code: &'static str,
    pub severity: Severity,
    /// CEL, true when the object violates the rule.
    pub condition: String,
}

/// Named CEL expressions: variables or match conditions.
pub type Named = Vec<(&'static str, String)>;

/// One kind the policy matches, with its variables and checks.
#[derive(Debug, Clone)]
pub struct Target {
    pub kind: &'static str,
    pub group: &'static str,
    pub resource: &'static str,
    /// Named CEL (`variables.NAME`), evaluated in order.
    pub variables: Named,
    /// Objects for which all are true are checked.
    pub match_conditions: Named,
    pub checks: Vec<Check>,
}

/// Every kind lint reads, for the operator of `generation`.
pub fn targets(generation: Generation) -> Vec<Target> {
    vec![
        inferadeployment(generation),
        deployment(),
        statefulset(),
        leaderworkerset(),
        dynamo(),
    ]
}

/// True when the object's lint-ignore annotation names `code` (by code or
/// name, any case), for the whole object or (`service`, a CEL string
/// expression) for that service.
pub fn ignored(code: &str, service: Option<&str>) -> String {
    let meta = infera_lint::rules::rule(code).map_or(code, |m| m.name);
    let annotations = "object.metadata.annotations";
    let key = lit(LINT_IGNORE_ANNOTATION);
    let value = format!("{annotations}[{key}]");
    let head = format!(r"(^|,)\s*(?i:{code}|{meta})\s*");
    let whole = lit(&format!("{head}(,|$)"));
    let named = match service {
        // A service name that is not a plain word is not spliced into a
        // regular expression: only whole-object entries apply to it.
        Some(s) => format!(
            " || ({s}.matches('^[A-Za-z0-9_-]+$') && {value}.matches({} + {s} + {}))",
            lit(&format!(r"{head}/\s*")),
            lit(r"\s*(,|$)")
        ),
        None => String::new(),
    };
    format!("(has({annotations}) && {key} in {annotations} && ({value}.matches({whole}){named}))")
}

fn check(code: &'static str, severity: Severity, condition: String) -> Check {
    Check {
        code,
        severity,
        condition,
    }
}

/// `condition` for one service `s` of `spec.services`, not suppressed for it.
fn per_service(code: &'static str, severity: Severity, condition: &str) -> Check {
    let suppressed = ignored(code, Some("s"));
    check(
        code,
        severity,
        format!(
            "has(object.spec.services) && object.spec.services.exists(s, ({condition}) && !{suppressed})"
        ),
    )
}

/// `condition` on the whole object, not suppressed.
fn whole(code: &'static str, severity: Severity, condition: &str) -> Check {
    check(
        code,
        severity,
        format!("({condition}) && !{}", ignored(code, None)),
    )
}

/// The facts of one InferaDeployment service `S` as the operator of the
/// generation renders it (`operator::workload::render`).
struct Service {
    svc: String,
    pod: String,
    main: String,
    /// True when the service has an `extraPodSpec` with containers.
    with_pod: String,
    worker: String,
    serving: String,
    skip: String,
    multinode: String,
    replicas: String,
    port: String,
    surge_first: String,
}

fn service(generation: Generation) -> Service {
    let svc = "object.spec.services[s]".to_string();
    let pod = format!("{svc}.extraPodSpec");
    let flat = format!("!has({svc}.extraPodSpec)");
    let with_pod = format!("(has({svc}.extraPodSpec) && {})", cel::has_containers(&pod));
    let main = cel::main_container(&pod);
    let worker = format!("!(has({svc}.componentType) && {svc}.componentType.trim() == 'server')");
    let serving = format!(
        "({worker} && ({flat} || ({with_pod} && {})))",
        cel::runs_infera(&main)
    );
    let skip = format!("(has({svc}.skipReadinessProbe) && {svc}.skipReadinessProbe == true)");
    let multinode = format!("({} > 1)", cel::count(&svc, "numberOfNodes", 1, 1));
    let replicas = cel::count(&svc, "replicas", 1, UNKNOWN_COUNT);
    let port = format!(
        "({flat} ? {} : {with_pod} ? {} : {})",
        cel::flat_readiness_port(&svc),
        cel::readiness_port(&main),
        infera_model::worker::DEFAULT_READINESS_PORT
    );
    // Surge-first (#176): probed /ready on the readiness port, by the
    // injected probe (no own probe, not skipped, port knowable) or a
    // container's own.
    let surge_first = if generation.surges() {
        format!(
            "(!{multinode} && ((!{skip} && ({flat} || ({with_pod} && !{})) && {port} > 0) || ({with_pod} && {pod}.containers.exists(c, {}))))",
            cel::has_probe(&main),
            cel::ready_on_readiness_port("c")
        )
    } else {
        "false".to_string()
    };
    Service {
        main,
        with_pod,
        svc,
        pod,
        worker,
        serving,
        skip,
        multinode,
        replicas,
        port,
        surge_first,
    }
}

fn inferadeployment(generation: Generation) -> Target {
    let s = service(generation);
    let Service {
        svc,
        pod,
        main,
        with_pod,
        worker,
        serving,
        skip,
        multinode,
        replicas,
        port,
        surge_first,
    } = &s;
    let pre_176 = !generation.surges();
    let ir001 = format!("{serving} && {skip}");
    // The operator's own GET /health on a port the rendered main container
    // declares (its own ports and the service port) is no IR005 before #176.
    let service_port = cel::count(
        svc,
        "port",
        i64::from(DEFAULT_WORKER_PORT),
        i64::from(DEFAULT_WORKER_PORT),
    );
    let own_health = if pre_176 {
        format!(
            "({} && ({} == {service_port} || (has({main}.ports) && {main}.ports.exists(q, q.containerPort == {}))))",
            cel::probes_path(main, infera_model::generation::HEALTH_PATH),
            cel::probe_port(main),
            cel::probe_port(main)
        )
    } else {
        "false".to_string()
    };
    let ir005 = format!(
        "{serving} && {with_pod} && {} && !{} && !{own_health} && !({ir001})",
        cel::has_probe(main),
        cel::ready_on_readiness_port(main)
    );
    let ir006 = if pre_176 {
        "false".to_string()
    } else {
        format!("{serving} && !{skip} && {port} < 0")
    };
    let one = format!("{replicas} == 1");
    let mut checks = vec![
        per_service("IR001", Severity::Error, &ir001),
        per_service(
            "IR003",
            Severity::Error,
            &format!(
                "{worker} && {with_pod} && {surge_first} && {} && ({} || {})",
                cel::pinned(pod),
                cel::host_network(pod),
                cel::declares_host_port(pod)
            ),
        ),
        per_service("IR005", Severity::Error, &format!("{ir005} && {one}")),
        per_service("IR005", Severity::Warning, &format!("{ir005} && !({one})")),
        per_service("IR006", Severity::Error, &format!("{ir006} && {one}")),
        per_service("IR006", Severity::Warning, &format!("{ir006} && !({one})")),
        per_service(
            "IR010",
            Severity::Warning,
            &format!(
                "{worker} && {with_pod} && {pod}.containers.exists(c, {} && {} <= 8 && ({} || c.name == {main}.name))",
                cel::probes_path("c", READY_PATH),
                cel::probe_timeout("c"),
                cel::runs_infera("c")
            ),
        ),
        per_service(
            "IR012",
            Severity::Error,
            &format!("{worker} && {multinode} && {replicas} <= 1"),
        ),
    ];
    if pre_176 {
        checks.push(per_service(
            "IR008",
            Severity::Error,
            &format!("{serving} && !{multinode} && {one} && !({ir001}) && !({ir005})"),
        ));
    }
    Target {
        kind: INFERA_DEPLOYMENT.kind,
        group: INFERA_DEPLOYMENT.group,
        resource: INFERA_DEPLOYMENT.plural,
        variables: Vec::new(),
        match_conditions: Vec::new(),
        checks,
    }
}

/// Variables every single-pod kind shares: `pod` (set by the caller),
/// `main`, `server` (the container running a catalogued engine, else the
/// main one), `engine`, `port` (its readiness port), `worker`.
fn pod_variables(pod: String) -> Named {
    let p = "variables.pod";
    let main = "variables.main";
    let engine = cel::engine_of("x");
    vec![
        ("pod", pod),
        ("main", cel::main_container(p)),
        (
            "server",
            format!(
                "{} != '' ? {main} : ({p}.containers.exists(x, {engine} != '') ? {p}.containers.filter(x, {engine} != '')[0] : {main})",
                cel::engine_of(main)
            ),
        ),
        ("engine", cel::engine_of("variables.server")),
        ("port", cel::readiness_port("variables.server")),
        (
            "worker",
            format!(
                "variables.engine == {}",
                lit(crate::cel::engine_id(&INFERA))
            ),
        ),
    ]
}

/// The checks of a plain workload's own pod: IR005, IR006, IR010, and the
/// one-root-cause filter the gap rules (IR007, IR008) are under.
fn pod_checks() -> (Vec<Check>, String) {
    let server = "variables.server";
    let ir005 = format!(
        "variables.worker && {} && !{}",
        cel::has_probe(server),
        cel::ready_on_readiness_port(server)
    );
    let ir006 = "variables.worker && variables.port < 0".to_string();
    let on_port = format!(
        "(variables.port > 0 && {} == variables.port)",
        cel::probe_port("c")
    );
    let checks = vec![
        whole("IR005", Severity::Warning, &ir005),
        whole("IR006", Severity::Error, &ir006),
        whole(
            "IR010",
            Severity::Warning,
            &format!(
                "variables.pod.containers.exists(c, {} && {} <= 8 && ({} || (c.name == {server}.name && (variables.worker || {on_port}))))",
                cel::probes_path("c", READY_PATH),
                cel::probe_timeout("c"),
                cel::runs_infera("c")
            ),
        ),
    ];
    (checks, format!("!({ir005}) && !({ir006})"))
}

/// A single-pod kind's pod variables, guarded: objects without a pod
/// template with containers are not checked.
fn with_pod(pod: &str, has_pod: String) -> (Named, Named) {
    let conditions = vec![("has-pod", has_pod)];
    (pod_variables(pod.to_string()), conditions)
}

/// Objects the infera operator renders from an InferaDeployment are checked
/// on the InferaDeployment (one root cause, one finding); refusing the
/// operator's own write would wedge it.
fn not_rendered() -> (&'static str, String) {
    (
        "not-rendered-by-infera-operator",
        format!(
            "!(has(object.metadata.labels) && {} in object.metadata.labels && object.metadata.labels[{}] == {})",
            lit(infera_model::worker::LABEL_MANAGED_BY),
            lit(infera_model::worker::LABEL_MANAGED_BY),
            lit(infera_model::worker::MANAGED_BY_VALUE)
        ),
    )
}

/// The pod template of an apps/v1 kind, and its replicas (`n`: 1 when a
/// placeholder holds them).
fn apps_pod() -> (Named, Named) {
    let pod = "object.spec.template.spec";
    let (mut variables, conditions) = with_pod(
        pod,
        format!(
            "{} && {}",
            cel::has_path("object", &["spec", "template", "spec"]),
            cel::has_containers(pod)
        ),
    );
    variables.extend([
        (
            "replicas",
            cel::count("object.spec", "replicas", 1, UNKNOWN_COUNT),
        ),
        (
            "n",
            format!("variables.replicas == {UNKNOWN_COUNT} ? 1 : variables.replicas"),
        ),
    ]);
    (variables, conditions)
}

fn deployment() -> Target {
    let (mut variables, mut conditions) = apps_pod();
    conditions.push(not_rendered());
    let ru = "object.spec.strategy.rollingUpdate";
    let has_ru = |f: &str| cel::has_path("object", &["spec", "strategy", "rollingUpdate", f]);
    let n = "variables.n";
    variables.extend([
        (
            "recreate",
            format!(
                "{} && object.spec.strategy.type == 'Recreate'",
                cel::has_path("object", &["spec", "strategy", "type"])
            ),
        ),
        (
            "surge",
            format!(
                "variables.recreate ? 0 : {} ? {} : (25 * {n} + 99) / 100",
                has_ru("maxSurge"),
                cel::scaled(&format!("{ru}.maxSurge"), n, true)
            ),
        ),
        (
            "unavailable0",
            format!(
                "variables.recreate ? {n} : {} ? {} : 25 * {n} / 100",
                has_ru("maxUnavailable"),
                cel::scaled(&format!("{ru}.maxUnavailable"), n, false)
            ),
        ),
        (
            "unavailable",
            "(!variables.recreate && variables.surge == 0 && variables.unavailable0 == 0) ? 1 : variables.unavailable0".to_string(),
        ),
        (
            "roll",
            "variables.recreate ? 'recreate' : (variables.surge > 0 && variables.unavailable == 0) ? 'surge-first' : variables.surge > 0 ? 'surge-or-retire' : 'old-pod-first'".to_string(),
        ),
    ]);
    let (mut checks, root_cause) = pod_checks();
    checks.extend([
        whole(
            "IR003",
            Severity::Error,
            &format!(
                "variables.roll == 'surge-first' && {} && {}",
                cel::binds_host_ports("variables.pod"),
                cel::pinned("variables.pod")
            ),
        ),
        whole(
            "IR007",
            Severity::Error,
            &format!(
                "variables.engine != '' && (variables.roll == 'surge-first' || variables.roll == 'surge-or-retire') && !{} && {root_cause}",
                cel::has_probe("variables.server")
            ),
        ),
        whole(
            "IR008",
            Severity::Error,
            &format!(
                "variables.replicas != {UNKNOWN_COUNT} && variables.replicas != 0 && variables.replicas - variables.unavailable < 1 && {root_cause}"
            ),
        ),
    ]);
    Target {
        kind: "Deployment",
        group: "apps",
        resource: "deployments",
        variables,
        match_conditions: conditions,
        checks,
    }
}

fn statefulset() -> Target {
    let (mut variables, conditions) = apps_pod();
    let strategy = "object.spec.updateStrategy";
    let ru = format!("{strategy}.rollingUpdate");
    let has_ru = |f: &str| cel::has_path("object", &["spec", "updateStrategy", "rollingUpdate", f]);
    let mu = format!("{ru}.maxUnavailable");
    let n = "variables.n";
    variables.extend([
        (
            // -1: the controller rolls nothing (OnDelete, or a partition at
            // or above the replicas).
            "unavailable",
            format!(
                "({} && {strategy}.type == 'OnDelete') || ({} && {ru}.partition >= {n}) ? -1 : !({}) ? 1 : type({mu}) == int ? ({mu} > 1 ? {mu} : 1) : {mu}.matches('^[0-9]+%$') ? ((int({mu}.substring(0, size({mu}) - 1)) * {n} + 99) / 100 > 1 ? (int({mu}.substring(0, size({mu}) - 1)) * {n} + 99) / 100 : 1) : 1",
                cel::has_path("object", &["spec", "updateStrategy", "type"]),
                has_ru("partition"),
                has_ru("maxUnavailable")
            ),
        ),
    ]);
    let (mut checks, root_cause) = pod_checks();
    checks.push(whole(
        "IR008",
        Severity::Error,
        &format!(
            "variables.engine != '' && variables.unavailable >= 0 && variables.replicas != {UNKNOWN_COUNT} && variables.replicas != 0 && variables.replicas - variables.unavailable < 1 && {root_cause}"
        ),
    ));
    Target {
        kind: "StatefulSet",
        group: "apps",
        resource: "statefulsets",
        variables,
        match_conditions: conditions,
        checks,
    }
}

fn leaderworkerset() -> Target {
    let tpl = "object.spec.leaderWorkerTemplate";
    let leader = format!(
        "({} && {})",
        cel::has_path(tpl, &["leaderTemplate", "spec"]),
        cel::has_containers(&format!("{tpl}.leaderTemplate.spec"))
    );
    let pod = format!("{leader} ? {tpl}.leaderTemplate.spec : {tpl}.workerTemplate.spec");
    let has_pod = format!(
        "{} && ({leader} || ({} && {}))",
        cel::has_path("object", &["spec", "leaderWorkerTemplate"]),
        cel::has_path(tpl, &["workerTemplate", "spec"]),
        cel::has_containers(&format!("{tpl}.workerTemplate.spec"))
    );
    let (mut variables, mut conditions) = with_pod(&pod, has_pod);
    conditions.push(not_rendered());
    let ru = "object.spec.rolloutStrategy.rollingUpdateConfiguration";
    let has_ru = |f: &str| {
        cel::has_path(
            "object",
            &["spec", "rolloutStrategy", "rollingUpdateConfiguration", f],
        )
    };
    let n = "(variables.replicas == {UNKNOWN} ? 1 : variables.replicas)"
        .replace("{UNKNOWN}", &UNKNOWN_COUNT.to_string());
    variables.extend([
        (
            "replicas",
            cel::count(
                "object.spec",
                "replicas",
                i64::from(lws::DEFAULT_REPLICAS),
                UNKNOWN_COUNT,
            ),
        ),
        (
            "size",
            cel::count(tpl, "size", i64::from(lws::DEFAULT_SIZE), UNKNOWN_COUNT),
        ),
        (
            "surge",
            format!(
                "{} ? {} : {}",
                has_ru("maxSurge"),
                cel::scaled(&format!("{ru}.maxSurge"), &n, true),
                lws::DEFAULT_MAX_SURGE
            ),
        ),
        (
            "unavailable0",
            format!(
                "{} ? {} : {}",
                has_ru("maxUnavailable"),
                cel::scaled(&format!("{ru}.maxUnavailable"), &n, false),
                lws::DEFAULT_MAX_UNAVAILABLE
            ),
        ),
        (
            "unavailable",
            "(variables.surge == 0 && variables.unavailable0 == 0) ? 1 : variables.unavailable0"
                .to_string(),
        ),
    ]);
    let (mut checks, _) = pod_checks();
    checks.push(whole(
        "IR012",
        Severity::Error,
        &format!(
            "variables.size != {UNKNOWN_COUNT} && variables.size > 1 && variables.replicas != {UNKNOWN_COUNT} && (variables.replicas - variables.unavailable < 1 || (variables.surge > 0 && variables.unavailable == 0 && !{}))",
            cel::has_probe("variables.server")
        ),
    ));
    Target {
        kind: LEADER_WORKER_SET.kind,
        group: LEADER_WORKER_SET.group,
        resource: LEADER_WORKER_SET.plural,
        variables,
        match_conditions: conditions,
        checks,
    }
}

fn dynamo() -> Target {
    use infera_model::manifest::dynamo::{GROUP, KIND};
    let svc = "object.spec.services[s]";
    let c = format!("{svc}.extraPodSpec.mainContainer");
    let worker = format!(
        "has({svc}.componentType) && {svc}.componentType == 'worker' && {}",
        cel::has_path(svc, &["extraPodSpec", "mainContainer"])
    );
    let nodes = cel::count(&format!("{svc}.multinode"), "nodeCount", 1, UNKNOWN_COUNT);
    let nodes = format!("(has({svc}.multinode) ? {nodes} : 1)");
    let replicas = cel::count(svc, "replicas", 1, UNKNOWN_COUNT);
    let checks = vec![
        per_service(
            "IR010",
            Severity::Warning,
            &format!(
                "{worker} && {} && {} <= 8 && ({} || {} == {})",
                cel::probes_path(&c, READY_PATH),
                cel::probe_timeout(&c),
                cel::runs_infera(&c),
                cel::probe_port(&c),
                infera_model::worker::DEFAULT_READINESS_PORT
            ),
        ),
        per_service(
            "IR012",
            Severity::Error,
            &format!(
                "{worker} && {nodes} != {UNKNOWN_COUNT} && {nodes} > 1 && {replicas} != {UNKNOWN_COUNT} && {replicas} - 1 < 1"
            ),
        ),
    ];
    Target {
        kind: KIND,
        group: GROUP,
        resource: "dynamographdeployments",
        variables: Vec::new(),
        match_conditions: Vec::new(),
        checks,
    }
}
