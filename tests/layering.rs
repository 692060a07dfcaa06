//! The modules of `crates/core`, and of each library crate, import each other in one
//! direction: a reader follows any of them down to the ones it uses without coming back
//! around. Read from the sources, as an import graph tool would: `crate::module` paths
//! outside of `#[cfg(test)]` modules and doc comments.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Each top-level module of `crates/core`, with the modules it names (a directory module's
/// files count as the module).
fn imports() -> BTreeMap<String, BTreeSet<String>> {
    imports_of("crates/core", &[])
}

/// Each top-level module of the crate in `dir`, with the modules it names; files named in
/// `test_files` (test modules of their own) are left out.
fn imports_of(dir: &str, test_files: &[&str]) -> BTreeMap<String, BTreeSet<String>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut files = vec![root.clone()];
    while let Some(path) = files.pop() {
        if path.is_dir() {
            for entry in std::fs::read_dir(&path).expect("the crate's sources read") {
                files.push(entry.expect("a directory entry").path());
            }
            continue;
        }
        let relative = path.strip_prefix(&root).expect("under the crate");
        let module = relative
            .components()
            .next()
            .and_then(|c| c.as_os_str().to_str())
            .expect("a file name")
            .trim_end_matches(".rs")
            .to_owned();
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default();
        if ["lib", "main", "tests"].contains(&module.as_str())
            || name == "tests"
            || test_files.contains(&name)
        {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("a source file reads");
        // Tests may reach anywhere: only what the crawler itself runs counts.
        let text = text
            .split("#[cfg(test)]\nmod tests")
            .next()
            .unwrap_or_default();
        // A doc comment's link is no import.
        let text: String = text
            .lines()
            .filter(|line| !line.trim_start().starts_with("//"))
            .map(|line| format!("{line}\n"))
            .collect();
        let used = graph.entry(module.clone()).or_default();
        for (at, _) in text.match_indices("crate::") {
            let rest = &text[at + "crate::".len()..];
            let names: Vec<&str> = match rest.strip_prefix('{') {
                // `crate::{a, b::C}`
                Some(group) => group
                    .split('}')
                    .next()
                    .unwrap_or_default()
                    .split(',')
                    .map(|part| part.trim().split("::").next().unwrap_or_default())
                    .collect(),
                None => vec![
                    rest.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                        .next()
                        .unwrap_or_default(),
                ],
            };
            for used_name in names {
                if !used_name.is_empty() && used_name != module {
                    used.insert(used_name.to_owned());
                }
            }
        }
    }
    graph
}

/// A cycle in `graph`, if there is one, as the modules along it.
fn cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(start) = path.iter().position(|n| n == node) {
            let mut found = path[start..].to_vec();
            found.push(node.to_owned());
            return Some(found);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_owned());
        for next in graph.get(node).into_iter().flatten() {
            if graph.contains_key(next)
                && let Some(found) = visit(next, graph, path, done)
            {
                return Some(found);
            }
        }
        path.pop();
        done.insert(node.to_owned());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|node| visit(node, graph, &mut Vec::new(), &mut done))
}

#[test]
fn the_crawlers_modules_import_one_another_without_a_cycle() {
    let graph = imports();
    // The graph was read: the modules every run goes through are in it, with their imports.
    for module in ["crawl", "setup", "run", "report", "config"] {
        assert!(graph.contains_key(module), "{module} not found: {graph:?}");
    }
    assert!(graph["run"].contains("setup"), "{graph:?}");
    assert_eq!(
        cycle(&graph),
        None,
        "an import cycle in crates/core: {graph:?}"
    );
}

#[test]
fn each_library_crates_modules_import_one_another_without_a_cycle() {
    for (dir, test_files) in [
        ("crates/bloom/src", &[][..]),
        ("crates/frontier/src", &[][..]),
        ("crates/links/src", &[][..]),
        ("crates/shared/src", &["conformance"][..]),
        ("crates/testweb/src", &[][..]),
    ] {
        let graph = imports_of(dir, test_files);
        assert!(graph.len() > 3, "{dir} was read: {graph:?}");
        assert_eq!(cycle(&graph), None, "an import cycle in {dir}: {graph:?}");
    }
}

#[test]
fn a_cycle_is_found_when_there_is_one() {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    graph.entry("a".into()).or_default().insert("b".into());
    graph.entry("b".into()).or_default().insert("c".into());
    graph.entry("c".into()).or_default();
    assert_eq!(cycle(&graph), None);
    graph.get_mut("c").unwrap().insert("a".into());
    assert_eq!(
        cycle(&graph),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
}
