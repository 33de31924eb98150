//! `blueprint-operator convert`: Blueprints converted between API versions offline, for GitOps
//! repositories, by the same function as the conversion webhook (docs/api-versions.md). A file may
//! hold many documents: Blueprints are converted, documents of other kinds pass through unchanged.

use std::path::PathBuf;

use blueprint_machine::conversion::{ApiVersion, ConversionError, convert};
use serde_json::{Value, json};

use crate::files::{BLUEPRINT_FILE_LIMIT, FileError, read_text_or_stdin};

/// The version to convert to.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// The Go operator 2.x's API (JSON text in spec.blueprint and spec.blueprintMask).
    V1,
    V2,
    V3,
}

/// How the converted documents are printed.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// YAML documents separated by `---` (keys sorted).
    Yaml,
    /// One JSON object; more than one document: a `List` of them, as kubectl prints.
    Json,
}

pub struct ConvertArgs {
    /// The file (`-`: standard input).
    pub file: PathBuf,
    pub to: Target,
    pub output: Output,
}

#[derive(Debug, thiserror::Error)]
pub enum ConvertError {
    #[error(transparent)]
    File(#[from] FileError),
    #[error("{file}: not valid YAML or JSON: {reason}")]
    NotYaml { file: String, reason: String },
    #[error("{file}: no document in it")]
    Empty { file: String },
    #[error("{file}: document {index}{}: {source}", item.map(|i| format!(", item {i}")).unwrap_or_default())]
    Conversion { file: String, index: usize, item: Option<usize>, source: ConversionError },
}

/// One document converted: a Blueprint, or the Blueprints among a list's items (`kubectl get blueprints
/// -o yaml` prints a `List`); anything else as it is. The error names the list item (from 1).
fn converted(mut document: Value, to: ApiVersion) -> Result<Value, (Option<usize>, ConversionError)> {
    let kind = document.get("kind").and_then(Value::as_str).unwrap_or_default();
    if kind == "Blueprint" {
        return convert(&document, to).map_err(|e| (None, e));
    }
    if (kind == "List" || kind.ends_with("List"))
        && let Some(Value::Array(items)) = document.get_mut("items")
    {
        for (index, item) in items.iter_mut().enumerate() {
            if item.get("kind").and_then(Value::as_str) == Some("Blueprint") {
                *item = convert(item, to).map_err(|e| (Some(index + 1), e))?;
            }
        }
    }
    Ok(document)
}

/// The converted documents, printed.
pub fn run(args: &ConvertArgs) -> Result<String, ConvertError> {
    let file =
        if args.file == std::path::Path::new("-") { "standard input".into() } else { args.file.display().to_string() };
    let text = read_text_or_stdin(&args.file, BLUEPRINT_FILE_LIMIT)?;
    let documents: Vec<Value> = serde_saphyr::from_multiple(&text)
        .map_err(|e| ConvertError::NotYaml { file: file.clone(), reason: e.to_string() })?;
    let documents: Vec<Value> = documents.into_iter().filter(|d| !d.is_null()).collect();
    if documents.is_empty() {
        return Err(ConvertError::Empty { file });
    }
    let to = match args.to {
        Target::V1 => ApiVersion::V1,
        Target::V2 => ApiVersion::V2,
        Target::V3 => ApiVersion::V3,
    };
    let converted = documents
        .into_iter()
        .enumerate()
        .map(|(index, document)| {
            converted(document, to).map_err(|(item, source)| ConvertError::Conversion {
                file: file.clone(),
                index: index + 1,
                item,
                source,
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(match args.output {
        Output::Yaml => converted
            .iter()
            .map(|document| serde_saphyr::to_string(document).expect("JSON values print as YAML"))
            .collect::<Vec<_>>()
            .join("---\n"),
        Output::Json => {
            let value = match <[Value; 1]>::try_from(converted) {
                Ok([one]) => one,
                Err(many) => json!({"apiVersion": "v1", "kind": "List", "items": many}),
            };
            format!("{}\n", serde_json::to_string_pretty(&value).expect("JSON values print"))
        }
    })
}
