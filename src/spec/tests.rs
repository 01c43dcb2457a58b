//! Loader tests over whole documents: the fixtures of `fixtures/specs/` and small inline ones.

use std::path::{Path, PathBuf};

use serde_json::json;

use super::*;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/specs")
        .join(name)
}

fn load_fixture(name: &str) -> Api {
    let path = fixture(name);
    load(path.to_str().unwrap()).unwrap().api
}

fn op<'a>(api: &'a Api, id: &str) -> &'a Operation {
    api.operations
        .iter()
        .find(|o| o.key.id.as_deref() == Some(id))
        .unwrap_or_else(|| panic!("no operation {id}"))
}

fn param<'a>(op: &'a Operation, name: &str) -> &'a Parameter {
    op.parameters
        .iter()
        .find(|p| p.name == name)
        .unwrap_or_else(|| panic!("no parameter {name}"))
}

fn inline(text: &str) -> Result<Api, SpecError> {
    parse(text.as_bytes(), "inline.yaml", None)
}

#[test]
fn swagger_servers_and_base_path() {
    let api = load_fixture("swagger2.yaml");
    assert_eq!(api.spec_version, SpecVersion::Swagger2);
    assert_eq!(
        api.servers,
        vec![
            "https://petstore.example.com/v2",
            "http://petstore.example.com/v2"
        ]
    );
    assert_eq!(api.base_path, "/v2");
    assert_eq!(api.operations.len(), 5);
    assert!(api.skipped.is_empty());
}

#[test]
fn swagger_body_becomes_request_body() {
    let api = load_fixture("swagger2.yaml");
    let body = op(&api, "createPet").request_body.as_ref().unwrap();
    assert!(body.required);
    assert_eq!(body.content.len(), 1);
    assert_eq!(body.content[0].media_type, "application/json");
    assert_eq!(body.content[0].schema, json!({"$ref": "#/$defs/Pet"}));
    let pet = &api.schemas.defs["Pet"];
    assert_eq!(
        pet["properties"]["owner"]["type"],
        json!(["string", "null"])
    );
    assert_eq!(
        pet["properties"]["photo"],
        json!({"type": "string", "format": "binary"})
    );
    assert_eq!(pet["properties"]["name"]["examples"], json!(["Rex"]));
}

#[test]
fn swagger_form_data_becomes_form_body() {
    let api = load_fixture("swagger2.yaml");
    let body = op(&api, "updatePetForm").request_body.as_ref().unwrap();
    assert!(body.required);
    assert_eq!(
        body.content[0].media_type,
        "application/x-www-form-urlencoded"
    );
    assert_eq!(body.content[0].schema["required"], json!(["name"]));
    assert_eq!(
        body.content[0].schema["properties"]["status"]["enum"],
        json!(["available", "sold"])
    );
    // A file parameter makes it multipart even when url-encoding is also offered.
    let upload = op(&api, "uploadPhoto").request_body.as_ref().unwrap();
    assert_eq!(upload.content[0].media_type, "multipart/form-data");
    assert_eq!(
        upload.content[0].schema["properties"]["file"],
        json!({"type": "string", "format": "binary"})
    );
}

#[test]
fn swagger_collection_format_becomes_style() {
    let api = load_fixture("swagger2.yaml");
    let list = op(&api, "listPets");
    let tags = param(list, "tags");
    assert_eq!((tags.style, tags.explode), (ParameterStyle::Form, true));
    let ids = param(list, "ids");
    assert_eq!(
        (ids.style, ids.explode),
        (ParameterStyle::PipeDelimited, false)
    );
    let trace = param(list, "X-Trace");
    assert_eq!(trace.location, Location::Header);
    assert_eq!(
        (trace.style, trace.explode),
        (ParameterStyle::Simple, false)
    );
    assert_eq!(
        trace.schema,
        json!({"type": "array", "items": {"type": "string"}})
    );
    // Inline fields of a referenced parameter become a schema, bounds converted.
    let limit = param(list, "limit");
    assert_eq!(
        limit.schema,
        json!({"type": "integer", "format": "int32", "minimum": 1, "exclusiveMaximum": 100})
    );
}

#[test]
fn swagger_path_level_parameters_are_merged() {
    let api = load_fixture("swagger2.yaml");
    // The path level gives `petId` to every operation of the path...
    let show = op(&api, "showPet");
    assert_eq!(param(show, "petId").location, Location::Path);
    assert_eq!(param(show, "petId").schema, json!({"type": "string"}));
    // ...and an operation's own `petId` wins, in the place of the path-level one.
    let update = op(&api, "updatePetForm");
    assert_eq!(update.parameters.len(), 1);
    assert_eq!(
        param(update, "petId").schema,
        json!({"type": "integer", "minimum": 1})
    );
}

#[test]
fn swagger_responses_and_headers() {
    let api = load_fixture("swagger2.yaml");
    let list = op(&api, "listPets");
    let statuses: Vec<StatusPattern> = list.responses.iter().map(|r| r.status).collect();
    assert_eq!(
        statuses,
        vec![StatusPattern::Exact(200), StatusPattern::Default]
    );
    assert_eq!(
        list.responses[0].content[0].schema["items"],
        json!({"$ref": "#/$defs/Pet"})
    );
    assert_eq!(list.responses[0].headers[0].name, "X-Total");
    assert_eq!(
        list.responses[0].headers[0].schema,
        json!({"type": "integer"})
    );
    assert!(op(&api, "createPet").responses[0].content.is_empty());
}

#[test]
fn swagger_security() {
    let api = load_fixture("swagger2.yaml");
    assert_eq!(api.security_schemes["basic"], SecurityScheme::Basic);
    assert_eq!(api.security_schemes["oauth"], SecurityScheme::Bearer);
    assert_eq!(
        api.security_schemes["key"],
        SecurityScheme::ApiKey {
            location: Location::Header,
            name: "X-API-Key".into()
        }
    );
    assert_eq!(api.default_security, vec!["key"]);
    assert_eq!(op(&api, "listPets").security, vec!["key"]);
    assert_eq!(op(&api, "createPet").security, vec!["basic", "oauth"]);
    assert!(op(&api, "showPet").security.is_empty());
}

#[test]
fn openapi30_external_refs_are_shared_schemas() {
    let api = load_fixture("openapi30.yaml");
    let list = op(&api, "listOrders");
    let page = param(list, "page");
    assert_eq!(page.schema, json!({"type": "integer", "minimum": 1}));
    let problem = list
        .responses
        .iter()
        .find(|r| r.status == StatusPattern::Default)
        .unwrap();
    assert_eq!(
        problem.content[0].schema,
        json!({"$ref": "#/$defs/common.Error"})
    );
    let error = &api.schemas.defs["common.Error"];
    assert_eq!(
        error["properties"]["detail"],
        json!({"$ref": "#/$defs/common.Detail"})
    );
    assert_eq!(
        error["properties"]["message"]["type"],
        json!(["string", "null"])
    );
    assert!(api.schemas.defs.contains_key("common.Detail"));
}

#[test]
fn openapi30_schema_rules() {
    let api = load_fixture("openapi30.yaml");
    let order = &api.schemas.defs["Order"];
    assert_eq!(
        order["properties"]["amount"],
        json!({"type": "number", "exclusiveMinimum": 0})
    );
    assert_eq!(
        order["properties"]["status"],
        json!({"type": ["string", "null"], "enum": ["open", "closed", null]})
    );
    assert_eq!(order["properties"]["note"]["examples"], json!(["fragile"]));
    assert_eq!(order["properties"]["id"]["readOnly"], json!(true));
    assert_eq!(order["properties"]["id"]["format"], json!("uuid"));
}

#[test]
fn openapi30_responses_order_exact_range_default() {
    let api = load_fixture("openapi30.yaml");
    let list = op(&api, "listOrders");
    let statuses: Vec<StatusPattern> = list.responses.iter().map(|r| r.status).collect();
    assert_eq!(
        statuses,
        vec![
            StatusPattern::Exact(200),
            StatusPattern::Exact(404),
            StatusPattern::Range(4),
            StatusPattern::Default
        ]
    );
    assert_eq!(
        list.response_for(418).map(|r| r.status),
        Some(StatusPattern::Range(4))
    );
    let header = &list.responses[0].headers[0];
    assert!(header.required);
    assert_eq!(header.name, "X-Rate-Limit");
}

#[test]
fn openapi30_parameters_styles_and_ignored_headers() {
    let api = load_fixture("openapi30.yaml");
    let list = op(&api, "listOrders");
    assert!(list.parameters.iter().all(|p| p.name != "Accept"));
    let filter = param(list, "filter");
    assert_eq!(filter.style, ParameterStyle::DeepObject);
    assert!(!filter.explode);
    let page = param(list, "page");
    assert_eq!((page.style, page.explode), (ParameterStyle::Form, true));
}

#[test]
fn openapi30_servers_security_and_body() {
    let api = load_fixture("openapi30.yaml");
    assert_eq!(
        api.servers,
        vec!["https://eu.orders.example.com/api/v1", "/local"]
    );
    assert_eq!(api.base_path, "/api/v1");
    assert_eq!(api.security_schemes["bearer"], SecurityScheme::Bearer);
    assert_eq!(
        api.security_schemes["session"],
        SecurityScheme::ApiKey {
            location: Location::Cookie,
            name: "sid".into()
        }
    );
    assert_eq!(op(&api, "listOrders").security, vec!["bearer"]);
    let create = op(&api, "createOrder");
    assert!(create.security.is_empty());
    let body = create.request_body.as_ref().unwrap();
    assert!(body.required);
    assert_eq!(body.content[0].examples, vec![json!({"amount": 3})]);
}

#[test]
fn openapi31_is_kept_and_operation_parameters_win() {
    let api = load_fixture("openapi31.json");
    assert_eq!(api.spec_version, SpecVersion::OpenApi31);
    assert_eq!(api.base_path, "");
    let get = op(&api, "getNote");
    assert_eq!(
        param(get, "id").schema,
        json!({"type": "integer", "exclusiveMinimum": 0})
    );
    assert_eq!(
        get.responses[0].content[0].schema,
        json!({"$ref": "#/$defs/Note", "description": "the note"})
    );
    let patch = op(&api, "patchNote");
    assert_eq!(patch.parameters.len(), 1);
    assert_eq!(param(patch, "id").schema, json!({"type": "string"}));
    assert!(!patch.request_body.as_ref().unwrap().required);
    let note = &api.schemas.defs["Note"];
    assert_eq!(note["properties"]["tags"]["items"], json!(false));
}

#[test]
fn recursion_becomes_cycles_through_the_set() {
    let api = load_fixture("recursive.yaml");
    let node = &api.schemas.defs["Node"];
    assert_eq!(
        node["properties"]["children"]["items"],
        json!({"$ref": "#/$defs/Node"})
    );
    let person = &api.schemas.defs["Person"];
    let company = &api.schemas.defs["Company"];
    assert_eq!(
        person["properties"]["employer"],
        json!({"$ref": "#/$defs/Company"})
    );
    assert_eq!(
        company["properties"]["staff"]["items"],
        json!({"$ref": "#/$defs/Person"})
    );
    assert_eq!(api.operations.len(), 1);
}

#[test]
fn broken_operations_are_skipped_and_the_rest_loads() {
    let api = load_fixture("broken.yaml");
    assert_eq!(api.operations.len(), 1);
    assert_eq!(api.operations[0].key.path, "/fine");
    let reasons: Vec<(&str, &str)> = api
        .skipped
        .iter()
        .map(|s| (s.key.path.as_str(), s.reason.as_str()))
        .collect();
    assert_eq!(reasons.len(), 4);
    assert!(reasons[0].1.ends_with(
        "broken.yaml: /paths/~1dangling/get/responses/200/content/application~1json/schema/$ref: \
         reference `#/components/schemas/Missing` does not resolve"
    ));
    assert!(reasons[1].1.contains("reference chain has no content"));
    assert_eq!(reasons[2].1, "path parameter `{id}` is not declared");
    assert!(reasons[3].1.contains("`q`"));
    assert_eq!(api.skipped[2].pointer, "/paths/~1items~1{id}/get");
}

#[test]
fn syntax_error_is_refused_with_position() {
    let path = fixture("not-yaml.yaml");
    let err = load(path.to_str().unwrap()).unwrap_err();
    assert!(
        matches!(err, SpecError::Syntax { line: Some(3), .. }),
        "{err}"
    );
    assert!(err.to_string().contains("not-yaml.yaml: line 3"));
}

#[test]
fn unusable_documents_name_file_and_pointer() {
    let e = inline("openapi: 4.0.0\ninfo: {title: x, version: '1'}\npaths: {}\n").unwrap_err();
    assert!(matches!(e, SpecError::Version { .. }));
    assert_eq!(
        e.to_string(),
        "inline.yaml: /openapi: unsupported version `4.0.0`; probe reads Swagger 2.0 and OpenAPI 3.0 and 3.1"
    );
    let e = inline("info: {title: x}\npaths: {}\n").unwrap_err();
    assert!(e
        .to_string()
        .starts_with("inline.yaml: /: the top level has neither `openapi` nor `swagger`"));
    let e = inline("openapi: 3.0.0\npaths: [1]\n").unwrap_err();
    assert_eq!(
        e.to_string(),
        "inline.yaml: /paths: expected an object, found an array"
    );
    let e = inline("openapi: 3.0.0\n").unwrap_err();
    assert!(e.to_string().starts_with("inline.yaml: /paths: missing"));
    let e = inline("- 1\n- 2\n").unwrap_err();
    assert!(matches!(e, SpecError::Structure { .. }));
    let e = inline("swagger: '1.2'\npaths: {}\n").unwrap_err();
    assert!(matches!(e, SpecError::Version { .. }));
    // 3.1 may have no paths (webhooks only).
    assert!(inline("openapi: 3.1.0\ninfo: {title: x, version: '1'}\n").is_ok());
    // YAML numbers as versions.
    assert!(inline("swagger: 2.0\npaths: {}\n").is_ok());
}

#[test]
fn a_query_string_in_the_path_is_explained() {
    let api = inline(
        "openapi: 3.0.0\npaths:\n  /search?q={q}:\n    get:\n      parameters: [{name: q, in: query, schema: {type: string}}]\n      responses: {}\n",
    )
    .unwrap();
    assert_eq!(
        api.skipped[0].reason,
        "path parameter `{q}` is not declared (the path holds a query string, which OpenAPI does not allow)"
    );
}

#[test]
fn operations_keep_document_order() {
    let api = inline(
        "openapi: 3.0.0\npaths:\n  /b:\n    post: {responses: {}}\n    get: {responses: {}}\n  /a:\n    delete: {responses: {}}\n    x-other: {}\n",
    )
    .unwrap();
    let order: Vec<String> = api.operations.iter().map(|o| o.key.method_path()).collect();
    assert_eq!(order, vec!["POST /b", "GET /b", "DELETE /a"]);
    assert_eq!(api.operations[0].pointer, "/paths/~1b/post");
}

#[test]
fn external_reference_without_directory_is_a_skip_reason() {
    let api = inline(
        "openapi: 3.0.0\npaths:\n  /a:\n    get:\n      responses:\n        '200':\n          description: x\n          content:\n            application/json:\n              schema: {$ref: 'other.yaml#/X'}\n",
    )
    .unwrap();
    assert_eq!(api.skipped.len(), 1);
    assert!(
        api.skipped[0].reason.contains("has no directory"),
        "{}",
        api.skipped[0].reason
    );
}

#[test]
fn dangling_reference_in_another_file_names_that_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("other.yaml"),
        "X:\n  type: object\n  properties:\n    y: {$ref: '#/Nope'}\n",
    )
    .unwrap();
    let main = "openapi: 3.0.0\npaths:\n  /a:\n    post:\n      requestBody:\n        content:\n          application/json:\n            schema: {$ref: 'other.yaml#/X'}\n      responses: {}\n";
    let api = parse(main.as_bytes(), "main.yaml", Some(dir.path())).unwrap();
    assert_eq!(api.skipped.len(), 1);
    let reason = &api.skipped[0].reason;
    assert!(
        reason.ends_with("other.yaml: /X/properties/y/$ref: reference `#/Nope` does not resolve"),
        "{reason}"
    );
}

#[test]
fn security_scheme_kinds() {
    let api = inline(
        "openapi: 3.0.0\npaths: {}\ncomponents:\n  securitySchemes:\n    b: {type: http, scheme: Bearer}\n    basic: {type: http, scheme: basic}\n    digest: {type: http, scheme: digest}\n    oidc: {type: openIdConnect, openIdConnectUrl: x}\n    o2: {type: oauth2, flows: {}}\n    q: {type: apiKey, in: query, name: key}\nsecurity:\n  - {}\n  - b: []\n    q: []\n",
    )
    .unwrap();
    let s = &api.security_schemes;
    assert_eq!(s["b"], SecurityScheme::Bearer);
    assert_eq!(s["basic"], SecurityScheme::Basic);
    assert!(!s.contains_key("digest"));
    assert_eq!(s["oidc"], SecurityScheme::Bearer);
    assert_eq!(s["o2"], SecurityScheme::Bearer);
    assert_eq!(
        s["q"],
        SecurityScheme::ApiKey {
            location: Location::Query,
            name: "key".into()
        }
    );
    assert_eq!(api.default_security, vec!["b", "q"]);
}

#[test]
fn server_url_paths() {
    assert_eq!(path_of_url("https://api.example.com/v1/"), "/v1");
    assert_eq!(path_of_url("https://api.example.com"), "");
    assert_eq!(path_of_url("/v1"), "/v1");
    assert_eq!(path_of_url("/"), "");
    assert_eq!(path_of_url("//host/base?x=1"), "/base");
    assert_eq!(path_of_url("v2"), "/v2");
}

#[test]
fn deep_nesting_is_bounded() {
    let mut schema = String::from("{\"type\": \"string\"}");
    for _ in 0..110 {
        schema = format!("{{\"type\": \"array\", \"items\": {schema}}}");
    }
    let doc = format!(
        "{{\"openapi\": \"3.0.0\", \"paths\": {{\"/a\": {{\"post\": {{\"requestBody\": {{\"content\": {{\"application/json\": {{\"schema\": {schema}}}}}}}, \"responses\": {{}}}}}}}}}}"
    );
    let api = parse(doc.as_bytes(), "deep.json", None).unwrap();
    assert_eq!(api.skipped.len(), 1);
    assert!(api.skipped[0].reason.contains("nests deeper"));
}

/// Serves `body` once over HTTP on 127.0.0.1 and returns the URL.
fn serve_once(body: &'static str) -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        if let Ok((mut stream, _)) = listener.accept() {
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: application/yaml\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    format!("http://{addr}/openapi.yaml")
}

/// Serves each request whose path is a key of `files` (any number of requests) on
/// 127.0.0.1 and returns the base URL.
fn serve_files(files: &'static [(&'static str, &'static str)]) -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut buf = [0u8; 4096];
            let n = stream.read(&mut buf).unwrap_or(0);
            let request = String::from_utf8_lossy(&buf[..n]).to_string();
            let path = request.split(' ').nth(1).unwrap_or("").to_string();
            let (status, body) = match files.iter().find(|(p, _)| *p == path) {
                Some((_, body)) => ("200 OK", *body),
                None => ("404 Not Found", ""),
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    format!("http://{addr}")
}

#[test]
fn references_of_a_fetched_document_are_fetched_relative_to_it() {
    static FILES: &[(&str, &str)] = &[
        (
            "/specs/main.yaml",
            "openapi: 3.0.0\npaths:\n  /a:\n    get:\n      responses:\n        '200':\n          description: ok\n          content:\n            application/json:\n              schema: {$ref: 'parts/common.yaml#/Thing'}\n",
        ),
        ("/specs/parts/common.yaml", "Thing: {type: string, nullable: true}\n"),
    ];
    let base = serve_files(FILES);
    let doc = load(&format!("{base}/specs/main.yaml")).unwrap();
    assert!(doc.api.skipped.is_empty(), "{:?}", doc.api.skipped);
    assert_eq!(
        doc.api.schemas.defs["common.Thing"],
        json!({"type": ["string", "null"]})
    );
}

const SMALL: &str = "openapi: 3.0.0\ninfo: {title: Fetched, version: '1'}\npaths:\n  /a:\n    get: {responses: {'200': {description: ok}}}\n";

#[test]
fn load_fetches_a_url_outside_a_runtime() {
    let url = serve_once(SMALL);
    let doc = load(&url).unwrap();
    assert_eq!(doc.api.title, "Fetched");
    assert_eq!(doc.bytes, SMALL.as_bytes());
    assert_eq!(doc.source, url);
}

#[tokio::test]
async fn load_works_inside_a_runtime_too() {
    let url = serve_once(SMALL);
    let doc = load(&url).unwrap();
    assert_eq!(doc.api.operations.len(), 1);
    let url = serve_once(SMALL);
    let doc = load_async(&url).await.unwrap();
    assert_eq!(doc.api.operations.len(), 1);
}

#[test]
fn fetch_failure_names_the_url() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let url = format!("http://{addr}/x.yaml");
    let e = load(&url).unwrap_err();
    assert!(matches!(e, SpecError::Fetch { .. }));
    assert!(e.to_string().starts_with(&format!("{url}: cannot fetch")));
}

#[test]
fn missing_file_is_a_read_error() {
    let e = load("/nonexistent/openapi.yaml").unwrap_err();
    assert!(matches!(e, SpecError::Read { .. }));
    assert!(e
        .to_string()
        .starts_with("/nonexistent/openapi.yaml: cannot read"));
}

#[test]
fn error_is_send_and_sync() {
    fn check<T: std::error::Error + Send + Sync + 'static>() {}
    check::<SpecError>();
}

/// Every JSON pointer of a value's nodes.
fn pointers(v: &serde_json::Value, at: String, out: &mut Vec<String>) {
    out.push(at.clone());
    match v {
        serde_json::Value::Object(m) => {
            for (k, c) in m {
                pointers(c, format!("{at}/{}", resolve::escape_token(k)), out);
            }
        }
        serde_json::Value::Array(a) => {
            for (i, c) in a.iter().enumerate() {
                pointers(c, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// No document reachable from the fixtures by replacing one node makes the loader panic:
/// every node of every fixture is replaced by each of a few awkward values in turn.
#[test]
fn no_single_replacement_panics() {
    let awkward = [
        json!(null),
        json!(7),
        json!("x"),
        json!([]),
        json!({}),
        json!(false),
        json!({"$ref": "#"}),
        json!({"$ref": "#/paths"}),
        json!({"$ref": "#/nowhere"}),
        json!({"$ref": "common.yaml#/components/schemas/Error"}),
        json!([{"$ref": "#/components/parameters/Page"}]),
    ];
    let dir = fixture("");
    for name in [
        "swagger2.yaml",
        "openapi30.yaml",
        "openapi31.json",
        "recursive.yaml",
    ] {
        let bytes = std::fs::read(fixture(name)).unwrap();
        let root = load::parse_value(&bytes, name).unwrap();
        let mut all = Vec::new();
        pointers(&root, String::new(), &mut all);
        for p in &all {
            for value in &awkward {
                let mut doc = root.clone();
                if p.is_empty() {
                    doc = value.clone();
                } else if let Some(slot) = doc.pointer_mut(p) {
                    *slot = value.clone();
                }
                let text = serde_json::to_vec(&doc).unwrap();
                let result = std::panic::catch_unwind(|| parse(&text, name, Some(&dir)));
                assert!(result.is_ok(), "{name}: replacing {p} by {value} panics");
            }
        }
    }
}

proptest::proptest! {
    /// Arbitrary bytes are refused or loaded, never a panic.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400)) {
        let _ = parse(&bytes, "x", None);
    }

    /// Arbitrary text after a valid header, so the walk (not only the parser) is reached.
    #[test]
    fn arbitrary_documents_never_panic(body in "[a-z{}:\\[\\], \\n$#/'0-9-]{0,300}") {
        let text = format!("openapi: 3.0.0\npaths:\n  /a/{{id}}:\n    get: {body}\n");
        let _ = parse(text.as_bytes(), "x", None);
        let text = format!("swagger: '2.0'\npaths:\n  /a:\n    post:\n      parameters: {body}\n");
        let _ = parse(text.as_bytes(), "x", None);
    }
}

#[test]
fn other_files_are_kept_by_key_and_rebuild_the_same_model() {
    let loaded = load(fixture("openapi30.yaml").to_str().unwrap()).unwrap();
    let keys: Vec<&str> = loaded.documents.keys().map(String::as_str).collect();
    assert_eq!(keys, ["common.yaml"]);
    let rebuilt = parse_with_documents(
        &loaded.bytes,
        "somewhere/else/openapi30.yaml",
        loaded.documents.clone(),
    )
    .unwrap();
    let names =
        |api: &Api| -> Vec<String> { api.operations.iter().map(|o| o.key.name()).collect() };
    assert_eq!(names(&rebuilt), names(&loaded.api));
    assert_eq!(rebuilt.skipped.len(), loaded.api.skipped.len());
    assert_eq!(
        serde_json::to_value(&rebuilt.schemas).unwrap(),
        serde_json::to_value(&loaded.api.schemas).unwrap()
    );
    // Without them the references cannot be followed, and say so.
    let alone = parse_with_documents(&loaded.bytes, "x.yaml", Default::default()).unwrap();
    assert!(alone
        .skipped
        .iter()
        .any(|s| s.reason.contains("not among the files stored with the run")));
}

#[test]
fn stored_keys_join_lexically() {
    assert_eq!(resolve::join_key("", "common.yaml"), "common.yaml");
    assert_eq!(
        resolve::join_key("schemas", "../common.json"),
        "common.json"
    );
    assert_eq!(
        resolve::join_key("", "../shared/x.yaml"),
        "../shared/x.yaml"
    );
    assert_eq!(resolve::join_key("..", "./y.yaml"), "../y.yaml");
    assert_eq!(resolve::join_key("a/b", "../../../z.yaml"), "../z.yaml");
}
