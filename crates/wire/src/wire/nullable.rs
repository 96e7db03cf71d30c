//! The JSON Schema of a field that is always written, as a value or null: every wire type's
//! `Option` fields that the contract lists as present use it.

/// Schema transform for an `Option` field that is always written (as a value or null): schemars
/// makes `required` options non-null, so null is added back.
pub fn nullable(schema: &mut schemars::Schema) {
    if let Some(t) = schema.get_mut("type") {
        if let Some(word) = t.as_str().map(str::to_string) {
            *t = serde_json::json!([word, "null"]);
        }
        return;
    }
    let inner = std::mem::take(schema);
    *schema = schemars::json_schema!({ "anyOf": [inner, { "type": "null" }] });
}
