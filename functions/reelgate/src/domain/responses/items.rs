//! A conversation's items as they are stored and shown (`GET .../input_items`): a request's
//! input items once `normalize` has checked them and given them ids, and a response's output
//! items read back for the next turn. One type for both, so that a stored output item can come
//! back as an input (`item_reference`, `previous_response_id`).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

/// One item of a conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ConversationItem {
    Message {
        id: String,
        role: ItemRole,
        content: Vec<ContentPart>,
        status: String,
    },
    FunctionCall {
        id: String,
        call_id: String,
        name: String,
        /// A JSON text, as the model or the caller wrote it.
        arguments: String,
        status: String,
    },
    FunctionCallOutput {
        id: String,
        call_id: String,
        /// The tool's answer as text (text parts joined).
        output: String,
        status: String,
    },
}

impl ConversationItem {
    pub fn id(&self) -> &str {
        match self {
            ConversationItem::Message { id, .. }
            | ConversationItem::FunctionCall { id, .. }
            | ConversationItem::FunctionCallOutput { id, .. } => id,
        }
    }
}

/// Who wrote a message item. Chat has no developer role: developer and system messages both
/// become system instructions upstream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ItemRole {
    User,
    Assistant,
    Developer,
    System,
}

impl ItemRole {
    pub fn parse(role: &str) -> Option<ItemRole> {
        match role {
            "user" => Some(ItemRole::User),
            "assistant" => Some(ItemRole::Assistant),
            "developer" => Some(ItemRole::Developer),
            "system" => Some(ItemRole::System),
            _ => None,
        }
    }
}

/// A part of a message item's content.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentPart {
    InputText {
        text: String,
    },
    OutputText {
        text: String,
        /// Always empty in what this service writes; kept as stored.
        #[serde(default)]
        #[schema(value_type = Vec<Object>)]
        annotations: Vec<Value>,
    },
    Refusal {
        refusal: String,
    },
    /// Exactly one of `image_url` (an http(s) or `data:image/` URL) and `file_id`.
    InputImage {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        image_url: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        file_id: Option<String>,
        /// `auto`, `low` or `high`.
        detail: String,
    },
    /// Exactly one of `file_id`, `file_data` and `file_url`.
    InputFile {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        file_id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        file_data: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        file_url: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        filename: Option<String>,
    },
}

impl ContentPart {
    /// The part's words: its text or its refusal; None for an image or a file.
    pub fn text(&self) -> Option<&str> {
        match self {
            ContentPart::InputText { text } | ContentPart::OutputText { text, .. } => Some(text),
            ContentPart::Refusal { refusal } => Some(refusal),
            ContentPart::InputImage { .. } | ContentPart::InputFile { .. } => None,
        }
    }

    /// Whether turning this part into chat content is work before the request can be checked:
    /// a file (read, maybe rasterized) or an image that is not inline (fetched or read).
    pub fn needs_work(&self) -> bool {
        match self {
            ContentPart::InputFile { .. } => true,
            ContentPart::InputImage { image_url, .. } => {
                !image_url.as_deref().is_some_and(|u| u.starts_with("data:"))
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn stored_items_read_back_as_they_were_written() {
        let stored = json!([
            {"type": "message", "id": "msg_1", "role": "user", "content": [
                {"type": "input_text", "text": "look"},
                {"type": "input_image", "image_url": "data:image/png;base64,AA", "detail": "auto"},
                {"type": "input_file", "file_id": "file-1", "filename": "a.pdf"}
            ], "status": "completed"},
            {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "f", "arguments": "{}", "status": "completed"},
            {"type": "function_call_output", "id": "fco_1", "call_id": "c1", "output": "ok", "status": "completed"}
        ]);
        let items: Vec<ConversationItem> =
            serde_json::from_value(stored.clone()).expect("stored items");
        assert_eq!(serde_json::to_value(&items).expect("json"), stored);
        assert_eq!(items[1].id(), "fc_1");
    }

    #[test]
    fn an_output_item_reads_as_a_conversation_item() {
        let output = json!({"type": "message", "id": "msg_2", "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "text": "hi", "annotations": []}]});
        let item: ConversationItem = serde_json::from_value(output).expect("an output item");
        let ConversationItem::Message { role, content, .. } = item else {
            panic!("a message");
        };
        assert_eq!(role, ItemRole::Assistant);
        assert_eq!(content[0].text(), Some("hi"));
    }

    #[test]
    fn only_files_and_fetched_images_are_work() {
        let image = |url: &str| ContentPart::InputImage {
            image_url: Some(url.into()),
            file_id: None,
            detail: "auto".into(),
        };
        assert!(!image("data:image/png;base64,AA").needs_work());
        assert!(image("https://example.com/a.png").needs_work());
        assert!(ContentPart::InputImage {
            image_url: None,
            file_id: Some("file-1".into()),
            detail: "low".into()
        }
        .needs_work());
        assert!(!ContentPart::InputText { text: "x".into() }.needs_work());
    }
}
