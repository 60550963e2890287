"use strict";
// The reelgate console: one page, hash routes, the /console/api routes with the session cookie
// and its CSRF token. No framework, no network besides this server.

const TEXT = {
  en: {
    skip: "Skip to content", console: "console", nav_terms: "Terms", nav_new: "New video",
    nav_videos: "Videos", nav_chat: "Chat", nav_keys: "API keys", nav_usage: "Usage",
    sign_out: "Sign out", signin_title: "Sign in", signin_oidc: "Sign in with {name}",
    signin_body: "Open the one-time sign-in link that `reelgate serve` printed when it started. Links expire and work once.",
    signin_more: "To make a link for someone else, an operator runs:",
    terms_title: "Video Service Terms", terms_version: "Version", agree: "I agree",
    agreed: "You agreed to this version.", not_agreed: "You have not agreed to this version yet.",
    new_title: "New video", needs_terms: "Agree to the Video Service Terms before creating videos.",
    model: "Model", seconds: "Seconds", aspect: "Aspect ratio", prompt: "Prompt",
    prompt_hint: "Describe the scene. Put spoken dialogue between <d> and </d>, e.g. <d>Good morning!</d>",
    quote: "Quote", available: "Available balance", create: "Create video", per_second: "per second",
    videos_title: "Videos", videos_hint: "Newest first. The list refreshes every 2 seconds while a video is rendering.",
    videos_empty: "No videos yet.", play: "Play", download: "Download", delete: "Delete",
    confirm_delete: "Delete this video and its files?", deleted: "Video deleted.",
    cancel: "Cancel", confirm_cancel: "Cancel this video? It will not be rendered or charged.",
    canceled: "Video canceled. You were not charged.",
    status_moderating: "moderating", status_translating: "translating", status_queued: "queued",
    status_in_progress: "in progress", status_completed: "completed", status_failed: "failed",
    status_canceled: "canceled", progress: "Progress", thumbnail: "Thumbnail of",
    chat_title: "Chat", effort: "Reasoning effort", message: "Message", send: "Send", reply: "Reply",
    default_effort: "default",
    keys_title: "API keys", keys_hint: "Keys call the /v1 API as you. A new key's secret is shown once; copy it now.",
    key_create: "Create key", key_secret: "New key (shown once)", revoke: "Revoke", revoked: "revoked",
    active: "active", created_at: "created", confirm_revoke: "Revoke this key? Programs using it stop working.",
    usage_title: "Usage", balance: "Balance", reserved: "Reserved for renders in flight",
    recent: "Recent charges", when: "When", what: "What", amount: "Amount", none: "No charges yet.",
    by_model_key: "Last 30 days by model and key", key: "Key",
    signed_out: "You are signed out.", session_ended: "Your session has ended. Sign in again with a new link.",
    nav_webhooks: "Webhooks",
    inputs_title: "Images and references (optional)",
    inputs_hint: "This model uses the inputs below. Each file is uploaded as soon as you choose it.",
    in_first_frame: "First frame", in_last_frame: "Last frame", in_reference_images: "Reference images",
    in_reference_videos: "Reference videos", in_reference_audio: "Reference audio",
    hint_first_frame: "An image the video starts from (PNG, JPEG or WebP, under 30 MiB).",
    hint_last_frame: "An image the video ends on (PNG, JPEG or WebP, under 30 MiB).",
    hint_reference_images: "Up to 8 images that should appear in the video (not together with frames).",
    hint_reference_videos: "Up to 2 clips to take motion or style from (MP4, up to 50 MiB each).",
    hint_reference_audio: "Up to 3 audio files mixed under the soundtrack (needs a reference image or video).",
    uploading: "Uploading", uploaded: "Uploaded", remove: "Remove", upload_failed: "The upload failed",
    upload_network: "The upload did not reach the server. Check the connection and choose the file again.",
    too_many: "Too many files for this input; the limit is {n}.",
    pick_not_image: "{name} is not a PNG, JPEG or WebP image, which this input takes.",
    pick_not_video: "{name} is not an MP4, MOV or WebM video, which this input takes.",
    pick_not_audio: "{name} is not MP3, WAV, OGG, FLAC or M4A audio, which this input takes.",
    pick_image_too_big: "{name} is {size} ({bytes} bytes); images must be smaller than {limit}.",
    pick_too_big: "{name} is {size} ({bytes} bytes); this input takes files of at most {limit}.",
    pick_length: "{name} lasts {secs} s; references must last {min} to {max} s.",
    seconds_choice: "What {model} renders.",
    prompt_required: "Write a prompt: what the video shows.",
    wait_uploads: "Wait until every upload has finished.",
    attach_image: "Attach an image", attach_hint: "This model can see images. The image is sent with your message.",
    remove_image: "Remove image",
    webhooks_title: "Webhooks",
    webhooks_hint: "Your organization's endpoints receive video.completed, video.failed and video.canceled events, signed per Standard Webhooks. A new or rotated secret is shown once; copy it now.",
    wh_url: "Endpoint URL", wh_events: "Events", wh_description: "Description (optional)", wh_create: "Add endpoint",
    wh_secret: "Signing secret (shown once)", wh_endpoints: "Endpoints", wh_empty: "No endpoints yet.", refresh: "Refresh",
    wh_rotate: "Rotate secret", wh_delete: "Delete", wh_enabled: "enabled", wh_disabled: "disabled",
    wh_disabled_reason: "Reason", wh_failures: "failures in a row", wh_last_success: "last success",
    wh_never: "never", wh_attempts: "Last attempts", wh_no_attempts: "No deliveries yet.",
    wh_attempt: "Attempt", wh_event: "Event", wh_result: "Result", wh_ok: "delivered", wh_failed: "failed",
    wh_created: "Endpoint added. Copy its signing secret now: it is not shown again.",
    wh_rotated: "New signing secret below; the previous one keeps signing for 24 hours.",
    wh_deleted: "Endpoint deleted.", confirm_wh_delete: "Delete this endpoint? It receives no more events.",
    confirm_wh_rotate: "Make a new signing secret for this endpoint?",
    lim_title: "Limits and budget", lim_requests_per_minute: "Requests per minute",
    lim_tokens_per_minute: "Tokens per minute", lim_video_creates_per_minute: "Video creates per minute",
    lim_monthly_budget: "Monthly budget", lim_from_key: "set on this key", lim_from_plan: "plan's limit",
    lim_unlimited: "unlimited", lim_committed: "committed this month", lim_no_budget: "no budget",
    lim_edit: "Change limits", lim_save: "Save limits", lim_saved: "Limits saved.",
    lim_hint: "Leave a field empty to use the plan's limit (or to have no budget). A limit cannot be above the plan's.",
  },
  ja: {
    skip: "本文へ移動", console: "コンソール", nav_terms: "規約", nav_new: "新しい動画",
    nav_videos: "動画", nav_chat: "チャット", nav_keys: "APIキー", nav_usage: "利用状況",
    sign_out: "サインアウト", signin_title: "サインイン", signin_oidc: "{name} でサインイン",
    signin_body: "`reelgate serve` の起動時に表示された一回限りのサインインリンクを開いてください。リンクには有効期限があり、一度しか使えません。",
    signin_more: "他の人のリンクは、運用者が次のコマンドで作成します:",
    terms_title: "動画サービス利用規約", terms_version: "版", agree: "同意する",
    agreed: "この版に同意済みです。", not_agreed: "この版にはまだ同意していません。",
    new_title: "新しい動画", needs_terms: "動画を作成する前に動画サービス利用規約に同意してください。",
    model: "モデル", seconds: "秒数", aspect: "アスペクト比", prompt: "プロンプト",
    prompt_hint: "場面を説明してください。話すせりふは <d> と </d> で囲みます(例: <d>おはよう!</d>)。",
    quote: "見積もり", available: "利用可能残高", create: "動画を作成", per_second: "1秒あたり",
    videos_title: "動画", videos_hint: "新しい順。レンダリング中は2秒ごとに更新されます。",
    videos_empty: "動画はまだありません。", play: "再生", download: "ダウンロード", delete: "削除",
    confirm_delete: "この動画とそのファイルを削除しますか?", deleted: "動画を削除しました。",
    cancel: "キャンセル", confirm_cancel: "この動画をキャンセルしますか?レンダリングされず、請求もされません。",
    canceled: "動画をキャンセルしました。請求はありません。",
    status_moderating: "審査中", status_translating: "翻訳中", status_queued: "待機中",
    status_in_progress: "レンダリング中", status_completed: "完了", status_failed: "失敗",
    status_canceled: "キャンセル", progress: "進捗", thumbnail: "サムネイル:",
    chat_title: "チャット", effort: "推論の強さ", message: "メッセージ", send: "送信", reply: "応答",
    default_effort: "既定",
    keys_title: "APIキー", keys_hint: "キーはあなたとして /v1 API を呼び出します。新しいキーのシークレットは一度だけ表示されます。今すぐコピーしてください。",
    key_create: "キーを作成", key_secret: "新しいキー(一度だけ表示)", revoke: "無効にする", revoked: "無効",
    active: "有効", created_at: "作成", confirm_revoke: "このキーを無効にしますか?使用中のプログラムは動かなくなります。",
    usage_title: "利用状況", balance: "残高", reserved: "レンダリング中の予約額",
    recent: "最近の請求", when: "日時", what: "内容", amount: "金額", none: "請求はまだありません。",
    by_model_key: "過去30日間(モデル・キー別)", key: "キー",
    signed_out: "サインアウトしました。", session_ended: "セッションが終了しました。新しいリンクでもう一度サインインしてください。",
    nav_webhooks: "Webhook",
    inputs_title: "画像と参照(任意)",
    inputs_hint: "このモデルは次の入力を使います。ファイルは選んだ時点でアップロードされます。",
    in_first_frame: "最初のフレーム", in_last_frame: "最後のフレーム", in_reference_images: "参照画像",
    in_reference_videos: "参照動画", in_reference_audio: "参照音声",
    hint_first_frame: "動画の始まりの画像(PNG・JPEG・WebP、30 MiB 未満)。",
    hint_last_frame: "動画の終わりの画像(PNG・JPEG・WebP、30 MiB 未満)。",
    hint_reference_images: "動画に登場させたい画像を最大8枚(フレームとは併用できません)。",
    hint_reference_videos: "動きや作風の参考にする動画を最大2本(MP4、各 50 MiB まで)。",
    hint_reference_audio: "サウンドトラックに重ねる音声を最大3つ(参照画像か参照動画が必要です)。",
    uploading: "アップロード中", uploaded: "アップロード済み", remove: "削除", upload_failed: "アップロードに失敗しました",
    upload_network: "アップロードがサーバーに届きませんでした。接続を確認して、もう一度ファイルを選んでください。",
    too_many: "この入力にはファイルが多すぎます。上限は {n} です。",
    pick_not_image: "{name} は PNG・JPEG・WebP の画像ではありません。この入力にはそれらの画像を選んでください。",
    pick_not_video: "{name} は MP4・MOV・WebM の動画ではありません。この入力にはそれらの動画を選んでください。",
    pick_not_audio: "{name} は MP3・WAV・OGG・FLAC・M4A の音声ではありません。この入力にはそれらの音声を選んでください。",
    pick_image_too_big: "{name} は {size}（{bytes} バイト）です。画像は {limit} 未満にしてください。",
    pick_too_big: "{name} は {size}（{bytes} バイト）です。この入力のファイルは {limit} までです。",
    pick_length: "{name} の長さは {secs} 秒です。参照ファイルは {min}〜{max} 秒にしてください。",
    seconds_choice: "{model} がレンダリングできる秒数です。",
    prompt_required: "プロンプトを入力してください（動画に映す内容）。",
    wait_uploads: "すべてのアップロードが終わるまでお待ちください。",
    attach_image: "画像を添付", attach_hint: "このモデルは画像を理解できます。画像はメッセージと一緒に送られます。",
    remove_image: "画像を外す",
    webhooks_title: "Webhook",
    webhooks_hint: "組織のエンドポイントは video.completed・video.failed・video.canceled イベントを Standard Webhooks の署名付きで受け取ります。新しい(またはローテーションした)シークレットは一度だけ表示されます。今すぐコピーしてください。",
    wh_url: "エンドポイントURL", wh_events: "イベント", wh_description: "説明(任意)", wh_create: "エンドポイントを追加",
    wh_secret: "署名シークレット(一度だけ表示)", wh_endpoints: "エンドポイント", wh_empty: "エンドポイントはまだありません。", refresh: "更新",
    wh_rotate: "シークレットを更新", wh_delete: "削除", wh_enabled: "有効", wh_disabled: "無効",
    wh_disabled_reason: "理由", wh_failures: "回連続で失敗", wh_last_success: "最後の成功",
    wh_never: "なし", wh_attempts: "最近の配信", wh_no_attempts: "配信はまだありません。",
    wh_attempt: "試行", wh_event: "イベント", wh_result: "結果", wh_ok: "配信済み", wh_failed: "失敗",
    wh_created: "エンドポイントを追加しました。署名シークレットを今すぐコピーしてください。再表示されません。",
    wh_rotated: "新しい署名シークレットを下に表示しました。以前のものも24時間は署名に使われます。",
    wh_deleted: "エンドポイントを削除しました。", confirm_wh_delete: "このエンドポイントを削除しますか?以後イベントは届きません。",
    confirm_wh_rotate: "このエンドポイントの署名シークレットを新しくしますか?",
    lim_title: "上限と予算", lim_requests_per_minute: "1分あたりのリクエスト数",
    lim_tokens_per_minute: "1分あたりのトークン数", lim_video_creates_per_minute: "1分あたりの動画作成数",
    lim_monthly_budget: "月間予算", lim_from_key: "このキーに設定", lim_from_plan: "プランの上限",
    lim_unlimited: "無制限", lim_committed: "今月の使用額", lim_no_budget: "予算なし",
    lim_edit: "上限を変更", lim_save: "上限を保存", lim_saved: "上限を保存しました。",
    lim_hint: "空欄にするとプランの上限を使います(予算は設定なし)。プランの上限を超える値は設定できません。",
  },
};

// Round 3 words.
Object.assign(TEXT.en, {
  signin_cli: "On this server, a new link comes from the command line where it runs:",
  signin_cli_unknown: "Put in your user and organization ids (reelgate serve prints them for the demo person when it starts).",
  signin_cli_known: "This is the command for the person who last signed in on this browser.",
  vp_model: "Model", vp_seconds: "Seconds", vp_ratio: "Aspect ratio", vp_size: "Size",
  vp_created: "Created", vp_completed: "Finished", vp_took: "Took", vp_expires: "Files kept until",
  vp_quote: "Quote", vp_charge: "Charge", vp_source: "Made from", vp_remix_of: "remix of {id}",
  vp_extension_of: "extension of {id}", vp_edit_of: "edit of {id}", vp_not_found: "No such video.",
  vp_remix: "Remix", vp_reuse: "Reuse settings", vp_retry: "Try again",
  vp_engine_prompt: "Prompt as rendered", vp_first_frame: "First frame", vp_last_frame: "Last frame",
  vp_reference_images: "Reference images", vp_reference_videos: "Reference videos", vp_reference_audio: "Reference audio",
  vp_characters: "Characters", vp_render_started: "Render started",
  vp_extend: "Extend", vp_extend_go: "Create extension", vp_more_seconds: "Seconds to add",
  vp_extend_hint: "A new video that plays this one, then continues it as the prompt says. The new part is charged; the whole lasts at most 60 s.",
  vp_edit: "Edit", vp_edit_go: "Create edit",
  vp_edit_hint: "A new video that keeps this one's motion, length and aspect ratio, changed as the prompt says.",
  vp_remix_hint: "A new video on the same model, seconds and aspect ratio, with a new prompt.",
  price_unknown: "no price set", stop: "Stop", stopped: "Stopped. The part above is kept; the model stopped too, and what it generated until then is charged.", vp_remix_go: "Create remix", keep: "Keep", revoke_go: "Revoke", rotate_go: "Make a new secret",
  vp_rendering: "Rendering", vp_progress: "Engine progress {n}%",
  view_code: "View code", view_code_hint: "The request that made this video. Put an API key in REELGATE_API_KEY first.",
  view_code_new_hint: "The request this form sends. Put an API key in REELGATE_API_KEY first.",
  view_code_chat_hint: "The chat's last request (or the next one). Put an API key in REELGATE_API_KEY first.",
  past_chats: "Past chats", untitled_chat: "(no message yet)", delete_chat: "Delete chat",
  confirm_delete_chat: "Delete this chat from this browser? It cannot be brought back.",
});
Object.assign(TEXT.ja, {
  signin_cli: "このサーバーでは、サーバーを動かしているコマンドラインで新しいリンクを作ります:",
  signin_cli_unknown: "ユーザー ID と組織 ID を入れてください(デモ用の人の ID は reelgate serve の起動時に表示されます)。",
  signin_cli_known: "このブラウザーで最後にサインインした人のコマンドです。",
  vp_model: "モデル", vp_seconds: "秒数", vp_ratio: "アスペクト比", vp_size: "サイズ",
  vp_created: "作成", vp_completed: "完了", vp_took: "所要時間", vp_expires: "ファイルの保存期限",
  vp_quote: "見積もり", vp_charge: "請求", vp_source: "元の動画", vp_remix_of: "{id} のリミックス",
  vp_extension_of: "{id} の延長", vp_edit_of: "{id} の編集", vp_not_found: "この動画はありません。",
  vp_remix: "リミックス", vp_reuse: "この設定で新規作成", vp_retry: "もう一度作成",
  vp_engine_prompt: "レンダリングしたプロンプト", vp_first_frame: "最初のフレーム", vp_last_frame: "最後のフレーム",
  vp_reference_images: "参照画像", vp_reference_videos: "参照動画", vp_reference_audio: "参照音声",
  vp_characters: "キャラクター", vp_render_started: "レンダリング開始",
  vp_extend: "延長", vp_extend_go: "延長を作成", vp_more_seconds: "追加する秒数",
  vp_extend_hint: "この動画を再生したあと、プロンプトのとおりに続ける新しい動画を作ります。請求は追加分のみで、全体は最長 60 秒です。",
  vp_edit: "編集", vp_edit_go: "編集を作成",
  vp_edit_hint: "この動画の動き・長さ・アスペクト比を保ち、プロンプトのとおりに変えた新しい動画を作ります。",
  vp_remix_hint: "同じモデル・秒数・アスペクト比で、新しいプロンプトの動画を作ります。",
  price_unknown: "料金未設定", stop: "停止", stopped: "停止しました。上の部分は残ります。モデルも生成を止め、それまでに生成した分だけを請求します。", vp_remix_go: "リミックスを作成", keep: "やめる", revoke_go: "無効にする", rotate_go: "新しく作る",
  vp_rendering: "レンダリング中", vp_progress: "エンジンの進捗 {n}%",
  view_code: "コードを表示", view_code_hint: "この動画を作ったリクエストです。先に REELGATE_API_KEY に API キーを入れてください。",
  view_code_new_hint: "このフォームが送るリクエストです。先に REELGATE_API_KEY に API キーを入れてください。",
  view_code_chat_hint: "チャットの直前のリクエスト（まだなければ次のもの）です。先に REELGATE_API_KEY に API キーを入れてください。",
  past_chats: "過去のチャット", untitled_chat: "（メッセージなし）", delete_chat: "チャットを削除",
  confirm_delete_chat: "このチャットをこのブラウザーから削除しますか？元に戻せません。",
});

// Round 2 words (kept apart from the first set so each language's list stays easy to compare).
Object.assign(TEXT.en, {
  signin_body: "To use the console, open the sign-in link you were given. A link signs you in once and expires after a few minutes.",
  signin_admin: "Need a new link? Ask your administrator to send you one.",
  link_refused: "This sign-in link has expired or was already used. Each link works once, for a short time.",
  status_moderating: "Checking the prompt", status_translating: "Translating the prompt", status_queued: "Waiting to render",
  status_in_progress: "Rendering", status_completed: "Completed", status_failed: "Failed", status_canceled: "Canceled",
  cancel: "Cancel", cancel_video: "Cancel video", elapsed: "Elapsed", engine_progress: "Engine progress",
  no_progress_yet: "The engine has not reported progress yet.",
  quote_running: "quote {amount}", charged: "charged {amount}", not_charged: "not charged",
  videos_hint: "Newest first. Rendering videos update every 2 seconds.",
  videos_empty: "No videos yet.", videos_empty_link: "Create your first video",
  videos_none_match: "No videos match.", filter: "Show", filter_all: "All videos",
  search: "Search", search_hint: "Words in the prompt", load_more: "Load older videos",
  filter_running: "Rendering", filter_completed: "Completed", filter_failed: "Failed", filter_canceled: "Canceled",
  play_video: "Play",
  seconds_range: "{min}–{max} seconds", aspect_Auto: "Auto: the engine picks (from your first frame when you upload one)",
  aspect_21_9: "21:9 cinema wide", aspect_16_9: "16:9 landscape", aspect_4_3: "4:3 classic", aspect_1_1: "1:1 square",
  aspect_3_4: "3:4 portrait", aspect_9_16: "9:16 tall (phones)",
  no_translator: "This server cannot translate Japanese prompts, so a Japanese prompt would fail. Write the scene in English; dialogue between <d> and </d> may stay in Japanese.",
  no_translator_block: "This server cannot translate Japanese prompts. Write the scene in English (dialogue between <d> and </d> may stay in Japanese).",
  preview_of: "Preview of",
  new_chat: "New chat", system_prompt: "System prompt", system_hint: "Instructions the model follows for the whole conversation (optional).",
  temperature: "Temperature", max_tokens: "Max tokens", conversation: "Conversation",
  chat_empty: "Send a message to start the conversation. Earlier turns are sent with each new message.",
  enter_hint: "Enter sends; Shift+Enter starts a new line.", you: "You", assistant: "Model",
  attach_hint: "This model can see images. The image goes with your message and stays in the conversation.",
  turn_usage: "{input} in · {output} out tokens · {cost}", attached_image: "Attached image",
  key_name: "Name (optional)", copy: "Copy", copied: "Copied to the clipboard.", unnamed: "Unnamed key",
  last_used: "last used", never_used: "never used", keys_empty: "No keys yet. Name one above and press Create key.",
  wh_empty_link: "Add your first endpoint above",
  last_30: "Last 30 days", spent: "Spent", tokens: "Tokens", video_seconds: "Video seconds",
  split_by: "Split by", by_model: "Model", by_kind: "Kind", kind: "Kind", quantity: "Quantity",
  by_model_kind: "Last 30 days by model and kind", usage_empty: "Nothing spent in the last 30 days.", try_chat: "Try the chat",
  kind_video_seconds: "Video seconds", kind_input_tokens: "Input tokens", kind_cached_input_tokens: "Cached input tokens", kind_cache_write_input_tokens: "Cache write tokens",
  kind_output_tokens: "Output tokens", kind_tokens: "Tokens", n_tokens: "{n} tokens", n_seconds: "{n} s",
  charge_video: "Video render", charge_chat: "Text model tokens", chart_label: "Spend per day over the last 30 days, by {split}",
  day_total: "{day}: {amount}", message_required: "Write a message first.",
});
Object.assign(TEXT.ja, {
  signin_body: "コンソールを使うには、受け取ったサインインリンクを開いてください。リンクは一度だけ使え、数分で期限が切れます。",
  signin_admin: "新しいリンクが必要な場合は、管理者に送ってもらってください。",
  link_refused: "このサインインリンクは期限切れか、すでに使われています。リンクは短い時間に一度だけ使えます。",
  status_moderating: "プロンプトを審査中", status_translating: "プロンプトを翻訳中", status_queued: "レンダリング待ち",
  status_in_progress: "レンダリング中", status_completed: "完了", status_failed: "失敗", status_canceled: "キャンセル済み",
  cancel: "中止する", cancel_video: "動画を中止", elapsed: "経過時間", engine_progress: "エンジンの進捗",
  no_progress_yet: "エンジンからの進捗はまだありません。",
  quote_running: "見積もり {amount}", charged: "請求額 {amount}", not_charged: "請求なし",
  confirm_cancel: "この動画のレンダリングを中止しますか?請求はされません。",
  canceled: "動画を中止しました。請求はありません。",
  videos_hint: "新しい順。レンダリング中の動画は2秒ごとに更新されます。",
  videos_empty: "動画はまだありません。", videos_empty_link: "最初の動画を作成する",
  videos_none_match: "条件に合う動画はありません。", filter: "表示", filter_all: "すべての動画",
  search: "検索", search_hint: "プロンプトの語句", load_more: "さらに古い動画を読み込む",
  filter_running: "レンダリング中", filter_completed: "完了", filter_failed: "失敗", filter_canceled: "キャンセル済み",
  play_video: "再生",
  seconds_range: "{min}〜{max} 秒", aspect_Auto: "自動: エンジンが選びます(最初のフレームがあればそれに合わせます)",
  aspect_21_9: "21:9 シネマワイド", aspect_16_9: "16:9 横長", aspect_4_3: "4:3 クラシック", aspect_1_1: "1:1 正方形",
  aspect_3_4: "3:4 縦長", aspect_9_16: "9:16 縦長(スマートフォン)",
  no_translator: "このサーバーは日本語のプロンプトを翻訳できないため、日本語のプロンプトは失敗します。場面は英語で書いてください(<d> と </d> の間のせりふは日本語のままで構いません)。",
  no_translator_block: "このサーバーは日本語のプロンプトを翻訳できません。場面は英語で書いてください(<d> と </d> の間のせりふは日本語のままで構いません)。",
  preview_of: "プレビュー:",
  new_chat: "新しいチャット", system_prompt: "システムプロンプト", system_hint: "会話全体でモデルが従う指示(任意)。",
  temperature: "温度", max_tokens: "最大トークン数", conversation: "会話",
  chat_empty: "メッセージを送って会話を始めましょう。これまでのやり取りは毎回まとめて送られます。",
  enter_hint: "Enter で送信、Shift+Enter で改行します。", you: "あなた", assistant: "モデル",
  attach_hint: "このモデルは画像を理解できます。画像はメッセージと一緒に送られ、会話に残ります。",
  turn_usage: "入力 {input}・出力 {output} トークン・{cost}", attached_image: "添付画像",
  key_name: "名前(任意)", copy: "コピー", copied: "クリップボードにコピーしました。", unnamed: "名前なしのキー",
  last_used: "最終使用", never_used: "未使用", keys_empty: "キーはまだありません。上で名前を付けて「キーを作成」を押してください。",
  wh_empty_link: "上のフォームで最初のエンドポイントを追加",
  last_30: "過去30日間", spent: "利用額", tokens: "トークン", video_seconds: "動画の秒数",
  split_by: "内訳", by_model: "モデル別", by_kind: "種類別", kind: "種類", quantity: "数量",
  by_model_kind: "過去30日間(モデル・種類別)", usage_empty: "過去30日間の利用はありません。", try_chat: "チャットを試す",
  kind_video_seconds: "動画の秒数", kind_input_tokens: "入力トークン", kind_cached_input_tokens: "キャッシュ済み入力トークン", kind_cache_write_input_tokens: "キャッシュ書き込みトークン",
  kind_output_tokens: "出力トークン", kind_tokens: "トークン", n_tokens: "{n} トークン", n_seconds: "{n} 秒",
  charge_video: "動画のレンダリング", charge_chat: "テキストモデルのトークン", chart_label: "過去30日間の1日ごとの利用額({split})",
  day_total: "{day}: {amount}", message_required: "先にメッセージを入力してください。",
});

// The API's error messages in Japanese, by `code` (and, for a request's invalid field, by `param`).
const ERRORS_JA = {
  console_login_required: "コンソールにサインインしてください。",
  csrf_token_invalid: "セッションの確認に失敗しました。ページを再読み込みしてください。",
  agreement_required: "動画を作成する前に動画サービス利用規約に同意してください。",
  insufficient_credits: "残高が足りません。",
  insufficient_quota: "残高が足りません。",
  key_budget_exceeded: "このキーの月間予算を超えます。",
  concurrency_limit_exceeded: "同時にレンダリングできる動画の数の上限に達しています。終わるのを待ってから作成してください。",
  rate_limit_exceeded: "リクエストが多すぎます。少し待ってからもう一度お試しください。",
  server_overloaded: "サーバーが混み合っています。少し待ってからもう一度お試しください。",
  model_not_found: "そのモデルは見つからないか、このプランでは使えません。",
  model_capability_mismatch: "このモデルはその入力に対応していません。",
  unsupported_reasoning_effort: "このモデルはその推論の強さに対応していません。",
  context_length_exceeded: "会話が長すぎてモデルの上限を超えています。「新しいチャット」で始め直してください。",
  upstream_unavailable: "モデルの提供元に接続できませんでした。少し待ってからもう一度お試しください。",
  upstream_timeout: "モデルの提供元が時間内に応答しませんでした。もう一度お試しください。",
  upstream_error: "モデルの提供元でエラーが起きました。もう一度お試しください。",
  provider_unavailable: "モデルの提供元が利用できません。少し待ってからもう一度お試しください。",
  file_too_large: "ファイルが大きすぎます。",
  payload_too_large: "送信するデータが大きすぎます。",
  unsupported_file_type: "この種類のファイルは使えません。",
  file_not_found: "ファイルが見つかりません。",
  video_not_found: "動画が見つかりません。",
  api_key_not_found: "APIキーが見つかりません。",
  webhook_not_found: "エンドポイントが見つかりません。",
  webhook_test_too_soon: "このエンドポイントには数秒前にテストイベントを送りました。少し待ってからもう一度お試しください。",
  url_refused: "このURLは使えません(プライベートアドレスなど)。",
  url_unreachable: "このURLに接続できませんでした。",
  internal_error: "サーバーでエラーが起きました。もう一度お試しください。",
  moderation_blocked: "プロンプトまたは参照がモデレーションによりブロックされました。請求はありません。",
  moderation_unavailable: "審査が利用できなかったため、レンダリングしませんでした。請求はありません。後でもう一度お試しください。",
  translation_unavailable: "日本語のプロンプトを翻訳できませんでした。請求はありません。後でもう一度お試しください。",
  translation_not_configured: "このサーバーには日本語プロンプトの翻訳機能がないため、このプロンプトはここではレンダリングできません。場面を英語で書いてください(<d> と </d> の間のせりふは日本語のままで構いません)。請求はありません。",
  engine_unavailable: "動画エンジンが利用できないか、レンダリング中に失敗しました。請求はありません。後でもう一度お試しください。",
};
const PARAMS_JA = {
  seconds: "秒数は {min}〜{max} の整数で指定してください。",
  aspect_ratio: "アスペクト比を一覧から選んでください。",
  prompt: "プロンプトを入力してください(長すぎる場合は短くしてください)。",
  model: "モデルを選んでください。",
  name: "名前は64文字以内で、制御文字を含めずに入力してください。",
  url: "エンドポイントURLを https:// で始まる正しいURLで入力してください。",
  events: "イベントを1つ以上選んでください。",
  temperature: "温度は 0〜2 の数で指定してください。",
  max_tokens: "最大トークン数は 1 以上の整数で指定してください。",
  messages: "メッセージを入力してください。",
};

// An API error's message in the console's language: Japanese by its code where the console knows it.
function errorText(err) {
  if (state.lang !== "ja" || !err) return err && err.message;
  if (err.code === "invalid_request_error" || !err.code) {
    const param = String(err.param || "").split(/[.[]/)[0];
    const lim = (state.models && state.models.limits) || {};
    if (PARAMS_JA[param]) return PARAMS_JA[param].replace("{min}", lim.min_seconds || 4).replace("{max}", lim.max_seconds || 15);
    return err.message;
  }
  return ERRORS_JA[err.code] || err.message;
}

const state = { lang: "en", session: null, terms: null, models: null, chatModels: null, timer: null, players: {},
  uploads: {}, uploadErrors: {}, frameOrder: [], chatImage: null, media: {}, videos: null,
  chat: [], chatBusy: false, chatAbort: null, usage: null, usageSplit: "model",
  videoPage: null, videoTimer: null, operation: null, codeLang: "curl", chatRestored: false };
const $ = (id) => document.getElementById(id);
const t = (key) => (TEXT[state.lang] && TEXT[state.lang][key]) || TEXT.en[key] || key;

function chooseLanguage() {
  const saved = localStorage.getItem("reelgate.lang");
  if (saved === "en" || saved === "ja") return saved;
  const langs = navigator.languages || [navigator.language || "en"];
  return langs.some((l) => String(l).toLowerCase().startsWith("ja")) ? "ja" : "en";
}

function applyLanguage() {
  document.documentElement.lang = state.lang;
  document.querySelectorAll("[data-i18n]").forEach((el) => { el.textContent = t(el.dataset.i18n); });
  document.querySelectorAll("[data-i18n-placeholder]").forEach((el) => { el.placeholder = t(el.dataset.i18nPlaceholder); });
  const sso = $("oidc-signin");
  if (sso) sso.textContent = t("signin_oidc").replace("{name}", sso.dataset.name);
  const other = state.lang === "ja" ? "English" : "日本語";
  $("lang").textContent = other;
  $("lang").setAttribute("aria-label", state.lang === "ja" ? "Switch to English" : "日本語に切り替える");
  $("lang").setAttribute("lang", state.lang === "ja" ? "en" : "ja");
  document.title = "reelgate " + t("console");
}

class ApiError extends Error {
  constructor(status, body) {
    const e = (body && body.error) || {};
    super(e.message || "HTTP " + status);
    this.status = status; this.code = e.code; this.param = e.param;
  }
}

async function api(method, path, body) {
  const headers = {};
  if (method !== "GET") headers["X-CSRF-Token"] = state.session ? state.session.csrf_token : "";
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const r = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: "same-origin" });
  let data = null;
  try { data = await r.json(); } catch (_) { data = null; }
  if (!r.ok) {
    if (r.status === 401 && path !== "/console/api/session") { sessionEnded(); }
    throw new ApiError(r.status, data);
  }
  return data;
}

// A notice over the page: a confirmation fades after a while, an error stays until clicked or
// replaced.
function flash(message, isError) {
  const f = $("flash");
  f.textContent = message || "";
  f.classList.toggle("error", !!isError);
  clearTimeout(state.flashTimer);
  if (message && !isError) state.flashTimer = setTimeout(() => { if (f.textContent === message) f.textContent = ""; }, 8000);
}

function clearErrors(root) {
  root.querySelectorAll(".field-error").forEach((el) => { el.textContent = ""; });
  root.querySelectorAll("[aria-invalid]").forEach((el) => el.removeAttribute("aria-invalid"));
}

// Shows an API error next to the field it concerns (by its `param`), else in `fallbackId`.
function showError(err, prefix, fallbackId) {
  const param = err.param ? String(err.param).split(/[.[]/)[0] : "";
  const target = param && $(prefix + param);
  const el = target || $(fallbackId);
  if (el) el.textContent = errorText(err);
  const input = document.querySelector(`[name="${param}"]`);
  if (target && input) { input.setAttribute("aria-invalid", "true"); }
}

// One money format everywhere: at least two decimals, more only where a sub-cent amount needs
// them (at most six), then the currency code ("2.30 USD", "0.000219 USD").
function money(amount, currency) {
  if (amount === undefined || amount === null || amount === "") return "—";
  const code = String(currency || "").toUpperCase();
  const n = Number(amount);
  if (!Number.isFinite(n)) return `${amount} ${code}`.trim();
  let text = n.toFixed(6).replace(/0+$/, "");
  const [whole, frac = ""] = text.split(".");
  text = `${whole}.${frac.padEnd(2, "0")}`;
  if (text === "-0.00") text = "0.00";
  return `${text} ${code}`.trim();
}

function sessionEnded() {
  state.session = null;
  flash(t("session_ended"), true);
  showSignedOut();
}

function showSignedOut() {
  $("nav").hidden = true; $("signout").hidden = true; $("who").textContent = "";
  fillSigninCommand();
  show("signin");
}

// The way back in on a server whose operator makes links on the command line: the exact command
// for the person who last signed in here (ids only are kept in the browser, never a secret).
function fillSigninCommand() {
  let last = null;
  try { last = JSON.parse(localStorage.getItem("reelgate.last_person") || "null"); } catch (_) { last = null; }
  const known = last && /^[\w-]+$/.test(last.user || "") && /^[\w-]+$/.test(last.org || "");
  $("signin-command").value = known
    ? `reelgate admin console-link --user ${last.user} --org ${last.org}`
    : "reelgate admin console-link --user USER_ID --org ORG_ID";
  $("signin-cli-who").dataset.i18n = known ? "signin_cli_known" : "signin_cli_unknown";
  $("signin-cli-who").textContent = t($("signin-cli-who").dataset.i18n);
}

const PAGES = ["signin", "terms", "new", "videos", "video", "chat", "keys", "webhooks", "usage"];
function show(name) {
  PAGES.forEach((p) => { $("page-" + p).hidden = p !== name; });
  document.querySelectorAll("nav a").forEach((a) => {
    if (a.getAttribute("href") === "#" + name) {
      a.setAttribute("aria-current", "page");
      // On a narrow screen the tabs scroll sideways: keep the current one in view.
      if (a.parentElement && a.parentElement.scrollWidth > a.parentElement.clientWidth) {
        a.scrollIntoView({ block: "nearest", inline: "nearest" });
      }
    } else a.removeAttribute("aria-current");
  });
  if (state.timer && name !== "videos") { clearTimeout(state.timer); state.timer = null; }
  if (state.videoTimer && name !== "video") { clearTimeout(state.videoTimer); state.videoTimer = null; }
}

async function route() {
  if (!state.session) { showSignedOut(); return; }
  const videoId = videoPagePath();
  if (videoId && location.hash) {
    // A nav link followed from a video's page: back to the console's own address.
    history.replaceState(null, "", "/console/" + location.hash);
  } else if (videoId) {
    show("video");
    try { await loadVideoPage(videoId); } catch (err) { if (err.status !== 401) flash(errorText(err), true); }
    return;
  }
  const name = (location.hash || "#videos").slice(1);
  const page = PAGES.includes(name) && name !== "signin" ? name : "videos";
  show(page);
  try {
    if (page === "terms") await loadTerms();
    if (page === "new") await loadNew();
    if (page === "videos") await loadVideos();
    if (page === "chat") await loadChat();
    if (page === "keys") await loadKeys();
    if (page === "webhooks") await loadWebhooks();
    if (page === "usage") await loadUsage();
  } catch (err) {
    if (err.status !== 401) flash(errorText(err), true);
  }
}

// Terms
async function loadTerms() {
  const terms = await api("GET", "/console/api/terms");
  state.terms = terms;
  $("terms-version").textContent = terms.terms_version;
  const text = terms.text || {};
  $("terms-text").textContent = (state.lang === "ja" ? text.ja : text.en) || text.en || "";
  const s = $("terms-state");
  s.textContent = terms.accepted ? t("agreed") : t("not_agreed");
  s.className = "state " + (terms.accepted ? "ok" : "no");
  $("agree").hidden = !!terms.accepted;
}

async function agree() {
  $("err-agree").textContent = "";
  try {
    await api("POST", "/console/api/terms/agree");
    await loadTerms();
    flash(t("agreed"));
  } catch (err) { $("err-agree").textContent = errorText(err); }
}

// New video
async function loadNew() {
  const [models, terms] = await Promise.all([api("GET", "/console/api/models"), api("GET", "/console/api/terms")]);
  state.models = models; state.terms = terms;
  $("new-needs-terms").hidden = !!terms.accepted;
  const sel = $("f-model"); const current = sel.value;
  sel.textContent = "";
  models.data.forEach((m) => {
    const p = m.pricing[0] || {};
    const o = document.createElement("option");
    o.value = m.id;
    o.textContent = `${m.name} — ${money(p.per_second, p.currency)} ${t("per_second")}`;
    sel.appendChild(o);
  });
  if (current && models.data.some((m) => m.id === current)) sel.value = current;
  const reuse = takeReusedSettings();
  if (reuse && models.data.some((m) => m.id === reuse.model)) {
    sel.value = reuse.model; $("f-prompt").value = reuse.prompt || "";
  }
  const lim = models.limits || {};
  showModelInputs();
  if (reuse) $("f-seconds").value = String(reuse.seconds);
  checkTranslation();
  if (lim.max_prompt_chars) $("f-prompt").maxLength = lim.max_prompt_chars;
  if (reuse) $("f-aspect").value = reuse.aspect_ratio;
  await updateQuote();
}

// The inputs a model's engine honours (catalog capabilities): only those are offered, with the
// request field each fills, the file purpose its upload needs, and how many files it takes.
const SLOTS = {
  first_frame: { purpose: "vision", max: 1 },
  last_frame: { purpose: "vision", max: 1 },
  reference_images: { purpose: "vision", max: 8 },
  reference_videos: { purpose: "video", max: 2 },
  reference_audio: { purpose: "audio", max: 3 },
};
Object.keys(SLOTS).forEach((name) => { state.uploads[name] = []; });
let uploadSeq = 0;

function currentModel() {
  return (state.models ? state.models.data : []).find((m) => m.id === $("f-model").value);
}

function showModelInputs() {
  const m = currentModel();
  const honoured = (m && m.inputs) || [];
  Object.keys(SLOTS).forEach((name) => { $("slot-" + name).hidden = !honoured.includes(name); });
  $("inputs").hidden = honoured.length === 0;
  const lim = (state.models && state.models.limits) || {};
  const ratios = (m && m.aspect_ratios && m.aspect_ratios.length ? m.aspect_ratios : lim.aspect_ratios) || ["16:9"];
  const asp = $("f-aspect"); const a0 = asp.value || "16:9";
  asp.textContent = "";
  ratios.forEach((r) => { const o = document.createElement("option"); o.value = r; o.textContent = aspectText(r); asp.appendChild(o); });
  asp.value = ratios.includes(a0) ? a0 : (ratios.includes("16:9") ? "16:9" : ratios[0]);
  showAspectHint();
  // Seconds are chosen from what the model renders: nothing to round, nothing out of range.
  const secs = $("f-seconds"); const wanted = secs.value || "4";
  fillSeconds(secs, m);
  if (secs.querySelector(`option[value="${wanted}"]`)) secs.value = wanted;
  const range = m && m.seconds;
  $("seconds-hint").textContent = range ? t("seconds_range").replace("{min}", range.min).replace("{max}", range.max) : "";
}

// Each aspect ratio explained, `Auto` included.
function aspectText(r) {
  const key = "aspect_" + String(r).replace(":", "_");
  return TEXT.en[key] ? t(key) : r;
}
function showAspectHint() {
  $("aspect-hint").textContent = $("f-aspect").value === "Auto" ? t("aspect_Auto") : "";
}

// Japanese outside <d>…</d> and quoted scene text needs the server's translator
// (domain::translation::needs_translation): without one, the form says so before submitting.
const JAPANESE = /[\u3040-\u309f\u30a0-\u30ff\u31f0-\u31ff\uff66-\uff9f\u4e00-\u9fff\u3400-\u4dbf]/;
function needsTranslation(prompt) {
  const outside = String(prompt).replace(/<d>[\s\S]*?<\/d>|「[\s\S]*?」|『[\s\S]*?』|"[\s\S]*?"|“[\s\S]*?”/g, "");
  return JAPANESE.test(outside);
}
function untranslatable() {
  return !!state.models && state.models.translator === false && needsTranslation($("f-prompt").value);
}
function checkTranslation() { $("translate-warning").hidden = !untranslatable(); }

function slotOffered(name) { return !$("slot-" + name).hidden; }

function setUploadError(name, message) {
  state.uploadErrors[name] = message || "";
  $("err-" + name).textContent = message || "";
  if (message) $("u-" + name).setAttribute("aria-invalid", "true"); else $("u-" + name).removeAttribute("aria-invalid");
}

// Upload failures stay next to their input until the person chooses files for it again.
function restoreUploadErrors() {
  Object.keys(SLOTS).forEach((name) => { if (state.uploadErrors[name]) setUploadError(name, state.uploadErrors[name]); });
}

function uploadStatusText(item) {
  return item.status === "done" ? `${t("uploaded")} · 100 %` : `${t("uploading")} · ${item.percent} %`;
}

function renderSlot(name) {
  const ul = $("list-" + name); ul.textContent = "";
  state.uploads[name].forEach((item) => {
    const li = document.createElement("li"); li.className = "upload-item"; li.id = "upload-" + item.key;
    li.dataset.status = item.status;
    const label = document.createElement("label"); label.textContent = item.name;
    const bar = document.createElement("progress"); bar.max = 100; bar.value = item.percent; bar.id = "bar-" + item.key;
    label.htmlFor = bar.id;
    const status = document.createElement("span"); status.className = "upload-status"; status.id = "status-" + item.key;
    status.textContent = uploadStatusText(item);
    if (item.preview) {
      const img = document.createElement("img"); img.className = "preview"; img.src = item.preview;
      img.alt = `${t("preview_of")} ${item.name}`; li.appendChild(img);
    }
    const rm = document.createElement("button"); rm.type = "button"; rm.className = "link"; rm.textContent = t("remove");
    rm.setAttribute("aria-label", `${t("remove")} ${item.name}`);
    rm.addEventListener("click", () => removeUpload(name, item));
    li.append(label, bar, status, rm);
    ul.appendChild(li);
  });
}

function setProgress(item, percent) {
  item.percent = Math.max(item.percent, Math.min(100, percent));
  const bar = $("bar-" + item.key); if (bar) bar.value = item.percent;
  const status = $("status-" + item.key); if (status) status.textContent = uploadStatusText(item);
}

function removeUpload(name, item) {
  item.removed = true;
  if (item.xhr) item.xhr.abort();
  state.uploads[name] = state.uploads[name].filter((i) => i !== item);
  if (item.preview) URL.revokeObjectURL(item.preview);
  if (!state.uploads[name].length) $("u-" + name).value = "";
  renderSlot(name);
  setUploadError(name, "");
  updateQuote();
}

// PUTs the bytes to the upload's URL (this server's signed URL locally, the bucket's presigned
// URL on AWS) with the headers the upload names, reporting progress as the bytes go out.
function putWithProgress(item, up, file) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest(); item.xhr = xhr;
    xhr.open(up.upload_method || "PUT", up.upload_url);
    Object.entries(up.upload_headers || {}).forEach(([k, v]) => xhr.setRequestHeader(k, v));
    xhr.upload.addEventListener("progress", (e) => {
      if (e.lengthComputable && e.total > 0) setProgress(item, Math.floor((e.loaded * 100) / e.total));
    });
    xhr.addEventListener("load", () => {
      item.xhr = null;
      if (xhr.status >= 200 && xhr.status < 300) { setProgress(item, 100); resolve(); return; }
      let message = `${t("upload_failed")} (HTTP ${xhr.status})`;
      try { const b = JSON.parse(xhr.responseText); if (b && b.error && b.error.message) message = b.error.message; } catch (_) { /* not JSON */ }
      reject(new Error(message));
    });
    xhr.addEventListener("error", () => { item.xhr = null; reject(new Error(t("upload_network"))); });
    xhr.addEventListener("abort", () => { item.xhr = null; reject(new Error(t("upload_failed"))); });
    xhr.send(file);
  });
}

// One file through the direct upload flow: create the upload, PUT the bytes, complete it into a
// file (sniffed and checked against the purpose by the server).
async function uploadOne(name, file) {
  const item = { key: "u" + (++uploadSeq), name: file.name, status: "uploading", percent: 0, file_id: null, xhr: null,
    preview: /^image\//.test(file.type) ? URL.createObjectURL(file) : null };
  state.uploads[name].push(item); renderSlot(name);
  try {
    const up = await api("POST", "/console/api/uploads", {
      purpose: SLOTS[name].purpose, filename: file.name, bytes: file.size, mime_type: file.type || "application/octet-stream",
    });
    if (item.removed) return;
    await putWithProgress(item, up, file);
    if (item.removed) return;
    const f = await api("POST", `/console/api/uploads/${encodeURIComponent(up.id)}/complete`);
    item.file_id = f.id; item.status = "done"; setProgress(item, 100);
    const li = $("upload-" + item.key); if (li) li.dataset.status = "done";
  } catch (err) {
    if (item.removed) return;
    state.uploads[name] = state.uploads[name].filter((i) => i !== item);
    renderSlot(name);
    if (!state.uploads[name].length) $("u-" + name).value = "";
    if (err.status !== 401) setUploadError(name, `${file.name}: ${errorText(err)}`);
  }
}

// What a file's first bytes say it is, for the kinds the inputs take (the server sniffs again
// when the upload completes; this only spares a person an upload that would be refused).
function sniffKind(head) {
  const at = (offset, text) => [...text].every((c, i) => head[offset + i] === c.charCodeAt(0));
  if (at(0, "\x89PNG") || (head[0] === 0xff && head[1] === 0xd8 && head[2] === 0xff) ||
    (at(0, "RIFF") && at(8, "WEBP"))) return "image";
  if (at(4, "ftyp")) return at(8, "M4A ") ? "audio" : "video";
  if (head[0] === 0x1a && head[1] === 0x45 && head[2] === 0xdf && head[3] === 0xa3) return "video";
  if (at(0, "ID3") || at(0, "OggS") || at(0, "fLaC") || (at(0, "RIFF") && at(8, "WAVE")) ||
    (head[0] === 0xff && (head[1] & 0xe0) === 0xe0)) return "audio";
  return "other";
}

const SLOT_KIND = { vision: "image", video: "video", audio: "audio" };

// How long a picked video or audio file plays, read by the browser; null when it cannot tell.
function mediaSeconds(file, kind) {
  return new Promise((resolve) => {
    const el = document.createElement(kind === "audio" ? "audio" : "video");
    const url = URL.createObjectURL(file);
    const done = (secs) => { URL.revokeObjectURL(url); resolve(secs); };
    el.preload = "metadata";
    el.onloadedmetadata = () => done(Number.isFinite(el.duration) ? el.duration : null);
    el.onerror = () => done(null);
    setTimeout(() => done(null), 5000);
    el.src = url;
  });
}

const mib = (n) => `${Number.isInteger(n / (1024 * 1024)) ? n / (1024 * 1024) : (n / (1024 * 1024)).toFixed(2)} MiB`;

// Refuses, in words, a picked file the create would refuse: too large for the field, not the
// kind the field takes, or (video, audio) outside the lengths references may last.
async function pickProblem(name, file) {
  const lim = (state.models && state.models.limits) || {};
  const kind = SLOT_KIND[SLOTS[name].purpose];
  const say = (key, values) => Object.entries(values).reduce((text, [k, v]) => text.replace(`{${k}}`, v), t(key));
  const sniffed = sniffKind(new Uint8Array(await file.slice(0, 16).arrayBuffer()));
  if (sniffed !== kind) return say("pick_not_" + kind, { name: file.name });
  const limit = kind === "image" ? lim.image_bytes_under : kind === "video" ? lim.reference_video_max_bytes : lim.reference_audio_max_bytes;
  if (limit && (kind === "image" ? file.size >= limit : file.size > limit)) {
    return say(kind === "image" ? "pick_image_too_big" : "pick_too_big",
      { name: file.name, size: mib(file.size), bytes: file.size.toLocaleString(state.lang), limit: mib(limit) });
  }
  if (kind !== "image" && lim.reference_media_seconds) {
    const secs = await mediaSeconds(file, kind);
    const [min, max] = lim.reference_media_seconds;
    if (secs !== null && (secs < min || secs > max)) {
      return say("pick_length", { name: file.name, secs: secs.toFixed(1), min, max });
    }
  }
  return null;
}

async function chooseFiles(name) {
  const input = $("u-" + name);
  // The input keeps showing what was chosen; the list below shows every upload with a preview.
  let files = Array.from(input.files || []);
  if (!files.length) return;
  setUploadError(name, "");
  const problems = [];
  const fine = [];
  for (const f of files) {
    const problem = await pickProblem(name, f);
    if (problem) problems.push(problem); else fine.push(f);
  }
  files = fine;
  const max = SLOTS[name].max;
  if (max === 1 && files.length) state.uploads[name].slice().forEach((item) => removeUpload(name, item));
  const room = max - state.uploads[name].length;
  if (files.length > room) { problems.push(t("too_many").replace("{n}", max)); files = files.slice(0, room); }
  if (problems.length) setUploadError(name, problems.join(" "));
  if (!files.length && !state.uploads[name].length) input.value = "";
  await Promise.all(files.map((f) => uploadOne(name, f)));
  await updateQuote();
}

// The uploaded files of the offered inputs, as the create request names them.
function addInputs(body) {
  const done = (name) => (slotOffered(name) ? state.uploads[name].filter((i) => i.status === "done") : []);
  const frames = []; state.frameOrder = [];
  ["first_frame", "last_frame"].forEach((name) => done(name).forEach((i) => {
    frames.push({ file_id: i.file_id, role: name }); state.frameOrder.push(name);
  }));
  if (frames.length) body.image_reference = frames;
  const refs = {};
  [["reference_images", "images"], ["reference_videos", "videos"], ["reference_audio", "audio"]].forEach(([name, key]) => {
    const list = done(name);
    if (list.length) refs[key] = list.map((i) => ({ file_id: i.file_id }));
  });
  if (Object.keys(refs).length) body.references = refs;
  return body;
}

// Which field of the New video page an API error's `param` concerns.
function newVideoField(param) {
  const p = String(param || "");
  const m = p.match(/^image_reference\[(\d+)\]/);
  if (m) return state.frameOrder[Number(m[1])] || "first_frame";
  if (p.startsWith("image_reference")) return state.frameOrder[0] || (slotOffered("first_frame") ? "first_frame" : "last_frame");
  if (p.startsWith("references.videos")) return "reference_videos";
  if (p.startsWith("references.audio")) return "reference_audio";
  if (p.startsWith("references")) return "reference_images";
  return p.split(/[.[]/)[0];
}

// Shows a problem next to its field (by name), else under the form; a field that already shows
// one keeps it, so problems found by the page and by the server show together.
function showFieldProblem(name, text) {
  let el = name ? $("err-" + name) : null;
  if (el && el.closest("[hidden]")) el = null;
  const target = el || $("err-form");
  if (target.textContent) return;
  target.textContent = text;
  const input = !el ? null : SLOTS[name] ? $("u-" + name) : $("new-form").querySelector(`[name="${name}"]`);
  if (input) input.setAttribute("aria-invalid", "true");
}

function showNewVideoError(err) { showFieldProblem(newVideoField(err.param), errorText(err)); }

// What the page itself knows is wrong with the form, every field at once.
function formProblems() {
  const problems = [];
  const prompt = $("f-prompt").value;
  if (!prompt.trim()) problems.push(["prompt", t("prompt_required")]);
  else if (untranslatable()) problems.push(["prompt", t("no_translator_block")]);
  if (Object.keys(SLOTS).some((name) => slotOffered(name) && state.uploads[name].some((i) => i.status !== "done"))) {
    problems.push(["form", t("wait_uploads")]);
  }
  return problems;
}

// The page's problems (once the person has tried to create) and the upload refusals, shown
// again after the quote cleared the form's errors.
function showKnownProblems() {
  restoreUploadErrors();
  (state.formProblems || []).forEach(([name, text]) => showFieldProblem(name, text));
  if ((state.formProblems || []).some(([name]) => name === "prompt") && untranslatable()) $("translate-warning").hidden = false;
}

function formBody() {
  const seconds = parseInt($("f-seconds").value, 10);
  return addInputs({ model: $("f-model").value, seconds: Number.isNaN(seconds) ? $("f-seconds").value : seconds,
    aspect_ratio: $("f-aspect").value, prompt: $("f-prompt").value });
}

let quoteSeq = 0;
async function updateQuote() {
  const seq = ++quoteSeq;
  const form = $("new-form");
  clearErrors(form); showKnownProblems();
  if ($("nv-code").open) showCode("nv");
  const body = formBody();
  if (!body.prompt.trim()) body.prompt = "-"; // the quote does not depend on the prompt's words
  try {
    const q = await api("POST", "/console/api/videos/quote", body);
    if (seq !== quoteSeq) return;
    $("quote-amount").textContent = money(q.amount, q.currency);
    $("quote-available").textContent = money(q.available, q.currency);
  } catch (err) {
    if (seq !== quoteSeq) return;
    $("quote-amount").textContent = "—";
    if (err.status !== 401) showNewVideoError(err);
  }
}

async function createVideo(ev) {
  ev.preventDefault();
  const form = $("new-form");
  state.formProblems = formProblems();
  if (state.formProblems.length) {
    // Every problem at once: the page's own, then the server's for the fields it checks.
    await updateQuote();
    const firstBad = form.querySelector("[aria-invalid]");
    if (firstBad) firstBad.focus();
    return;
  }
  clearErrors(form); restoreUploadErrors();
  const button = $("create"); button.disabled = true;
  try {
    const created = await api("POST", "/console/api/videos", formBody());
    Object.keys(SLOTS).forEach((name) => { state.uploads[name] = []; renderSlot(name); setUploadError(name, ""); });
    location.assign(videoPageUrl(created.id));
  } catch (err) {
    if (err.code === "agreement_required") { $("new-needs-terms").hidden = false; }
    showNewVideoError(err);
    const firstBad = form.querySelector("[aria-invalid]");
    if (firstBad) firstBad.focus();
  } finally { button.disabled = false; }
}

// Videos
function statusText(s) { return t("status_" + s); }
const TERMINAL = ["completed", "failed", "canceled"];
const RUNNING_FILTER = (v) => !TERMINAL.includes(v.status);

// What the job costs, truthfully: the quote while it runs, the charge once completed, nothing
// when it failed or was canceled (a job is billed at completion only).
function chargeText(v) {
  if (v.status === "completed") return t("charged").replace("{amount}", money(v.cost, v.currency));
  if (v.status === "failed" || v.status === "canceled") return t("not_charged");
  return t("quote_running").replace("{amount}", money(v.cost, v.currency));
}

function elapsedText(v) {
  const end = v.completed_at || Math.floor(Date.now() / 1000);
  const secs = Math.max(0, end - v.created_at);
  const m = Math.floor(secs / 60); const s = secs % 60;
  return `${m}:${String(s).padStart(2, "0")}`;
}

// The card's media box keeps the video's shape before anything loads, so nothing jumps.
function ratioOf(v) {
  const m = String(v.aspect_ratio || "").match(/^(\d+):(\d+)$/);
  if (m) return `${m[1]} / ${m[2]}`;
  const size = String(v.size || "").match(/^(\d+)x(\d+)$/);
  return size ? `${size[1]} / ${size[2]}` : "16 / 9";
}

function jobErrorText(e) {
  if (state.lang !== "ja") return e.message;
  const notConfigured = e.code === "translation_unavailable" && /no translator/i.test(e.message || "");
  return ERRORS_JA[notConfigured ? "translation_not_configured" : e.code] || e.message;
}

function videoCard(v) {
  const li = document.createElement("li"); li.className = "card video-card"; li.id = "video-" + v.id;
  li.tabIndex = -1; li.dataset.status = v.status;
  const box = document.createElement("div"); box.className = "media"; box.style.aspectRatio = ratioOf(v);
  const [w, h] = ratioOf(v).split(" / ").map(Number); box.style.setProperty("--ratio", String(w / h));
  const media = state.media[v.id];
  if (v.status === "completed" && media && media.thumbnail_url) {
    const img = document.createElement("img"); img.className = "thumb"; img.src = media.thumbnail_url;
    img.alt = `${t("thumbnail")} ${v.prompt}`;
    box.appendChild(img);
  } else if (v.status !== "completed") {
    const ph = document.createElement("div"); ph.className = "placeholder " + v.status; ph.textContent = statusText(v.status);
    ph.setAttribute("aria-hidden", "true");
    box.appendChild(ph);
  }
  if (v.status === "completed") {
    const play = document.createElement("button"); play.type = "button"; play.className = "play";
    play.textContent = "▶ " + t("play_video");
    play.setAttribute("aria-label", `${t("play_video")} ${v.id}`);
    play.addEventListener("click", () => playVideo(v, li));
    box.appendChild(play);
  }
  li.appendChild(box);
  const body = document.createElement("div"); body.className = "body";
  const head = document.createElement("div"); head.className = "head";
  const badge = document.createElement("span"); badge.className = "badge " + v.status; badge.textContent = statusText(v.status);
  const charge = document.createElement("span"); charge.className = "charge amount"; charge.textContent = chargeText(v);
  head.append(badge, charge); body.appendChild(head);
  const p = document.createElement("p"); p.className = "prompt";
  const open = document.createElement("a"); open.href = videoPageUrl(v.id); open.textContent = v.prompt;
  p.appendChild(open); body.appendChild(p);
  const meta = document.createElement("p"); meta.className = "meta";
  meta.textContent = `${v.model} · ${v.seconds} s · ${v.aspect_ratio} · ${when(v.created_at)}`;
  body.appendChild(meta);
  if (!TERMINAL.includes(v.status)) {
    const live = document.createElement("p"); live.className = "live";
    const el = document.createElement("span"); el.className = "elapsed"; el.textContent = `${t("elapsed")} ${elapsedText(v)}`;
    live.appendChild(el);
    body.appendChild(live);
    const bar = document.createElement("progress"); bar.max = 100; bar.id = "progress-" + v.id;
    const label = document.createElement("label"); label.htmlFor = bar.id; label.className = "meta";
    if (v.progress > 0) {
      bar.value = v.progress; label.textContent = `${t("engine_progress")} ${v.progress}%`;
    } else {
      label.textContent = v.status === "in_progress" ? t("no_progress_yet") : statusText(v.status);
    }
    body.append(label, bar);
  }
  if (v.error) { const e = document.createElement("p"); e.className = "field-error"; e.textContent = jobErrorText(v.error); body.appendChild(e); }
  const actions = document.createElement("div"); actions.className = "actions";
  if (v.status === "completed" && media) {
    const dl = document.createElement("a"); dl.className = "button"; dl.href = media.content_url; dl.download = v.id + ".mp4";
    dl.textContent = t("download"); dl.setAttribute("aria-label", `${t("download")} ${v.id}`);
    actions.appendChild(dl);
  }
  if (!TERMINAL.includes(v.status)) {
    const cancel = document.createElement("button"); cancel.type = "button"; cancel.textContent = t("cancel_video");
    cancel.setAttribute("aria-label", `${t("cancel")} ${v.id}`);
    cancel.addEventListener("click", () => cancelVideo(v));
    actions.appendChild(cancel);
  }
  if (TERMINAL.includes(v.status)) {
    const del = document.createElement("button"); del.type = "button"; del.className = "danger"; del.textContent = t("delete");
    del.setAttribute("aria-label", `${t("delete")} ${v.id}`);
    del.addEventListener("click", () => deleteVideo(v));
    actions.appendChild(del);
  }
  body.appendChild(actions);
  li.appendChild(body);
  if (state.players[v.id]) attachPlayer(li, v, false);
  return li;
}

// Replaces the thumbnail with a player of the same size and starts it.
function attachPlayer(li, v, start) {
  const media = state.media[v.id];
  const box = li.querySelector(".media");
  if (!media || !box) return null;
  box.textContent = "";
  const video = document.createElement("video");
  video.controls = true; video.preload = "metadata"; video.playsInline = true; video.src = media.content_url;
  video.setAttribute("aria-label", v.prompt);
  if (media.thumbnail_url) video.poster = media.thumbnail_url;
  box.appendChild(video);
  if (start) {
    const played = video.play();
    if (played && played.catch) played.catch(() => { /* the controls remain */ });
  }
  return video;
}

async function mediaOf(id) {
  const m = state.media[id];
  if (m && m.fetched + (m.expires_in - 60) * 1000 > Date.now()) return m;
  const fresh = await api("GET", `/console/api/videos/${id}/media`);
  fresh.fetched = Date.now();
  state.media[id] = fresh;
  return fresh;
}

async function playVideo(v, li) {
  try {
    await mediaOf(v.id);
    state.players[v.id] = true;
    const video = attachPlayer(li, v, true);
    if (video) video.focus();
  } catch (err) { flash(errorText(err), true); }
}

async function deleteVideo(v) {
  if (!(await askToConfirm("confirm_delete", "delete"))) return;
  try {
    await api("DELETE", `/console/api/videos/${v.id}`);
    delete state.players[v.id]; delete state.media[v.id];
    flash(t("deleted"));
    state.videos = state.videos.filter((x) => x.id !== v.id);
    renderVideos();
  } catch (err) { flash(errorText(err), true); }
}

async function cancelVideo(v) {
  if (!(await askToConfirm("confirm_cancel", "cancel_video"))) return;
  try {
    const canceled = await api("POST", `/console/api/videos/${v.id}/cancel`);
    flash(t("canceled"));
    state.videos = state.videos.map((x) => (x.id === v.id ? canceled : x));
    renderVideos();
  } catch (err) { flash(errorText(err), true); }
}

// The gallery pages through the API's cursor, newest first, with the filter and search served
// by the API; older pages load as the person scrolls to the end (or presses Load older videos).
const GALLERY_PAGE = 24;

function galleryQuery(after) {
  const q = new URLSearchParams({ limit: String(GALLERY_PAGE) });
  const f = $("v-filter").value;
  if (f !== "all") q.set("status", f);
  const words = $("v-search").value.trim();
  if (words) q.set("q", words);
  if (after) q.set("after", after);
  return q.toString();
}

// Loads the first page afresh (a new filter or search, or coming back to the page).
async function loadVideos() {
  if (state.timer) { clearTimeout(state.timer); state.timer = null; }
  const seq = (state.gallerySeq = (state.gallerySeq || 0) + 1);
  $("err-v-search").textContent = ""; $("v-search").removeAttribute("aria-invalid");
  let list;
  try { list = await api("GET", "/console/api/videos?" + galleryQuery(null)); } catch (err) {
    if (seq !== state.gallerySeq) return;
    if (err.param === "q" || err.param === "status") {
      $("err-v-search").textContent = errorText(err); $("v-search").setAttribute("aria-invalid", "true");
      return;
    }
    throw err;
  }
  if (seq !== state.gallerySeq) return;
  state.videos = list.data;
  state.galleryAfter = list.has_more ? list.last_id : null;
  await showPage(list.data);
  scheduleRefresh();
}

// The next older page, once at a time.
async function loadOlderVideos() {
  if (!state.galleryAfter || state.galleryLoading) return;
  state.galleryLoading = true;
  const seq = state.gallerySeq;
  try {
    const list = await api("GET", "/console/api/videos?" + galleryQuery(state.galleryAfter));
    if (seq !== state.gallerySeq) return;
    const known = new Set(state.videos.map((v) => v.id));
    state.videos = state.videos.concat(list.data.filter((v) => !known.has(v.id)));
    state.galleryAfter = list.has_more ? list.last_id : null;
    await showPage(list.data);
  } finally { state.galleryLoading = false; }
  // A page the filter left short may leave the end still in view: go on.
  if (state.galleryAfter && galleryEndInView()) loadOlderVideos().catch(() => {});
}

async function showPage(data) {
  // Every finished card shows its thumbnail and Download without a click.
  await Promise.all(data.filter((v) => v.status === "completed" && !state.media[v.id])
    .map((v) => mediaOf(v.id).catch(() => null)));
  renderVideos();
}

function galleryEndInView() {
  const r = $("videos-more").getBoundingClientRect();
  return r.top < window.innerHeight + 400;
}

// Running videos on the loaded pages are polled one by one and updated in place.
function scheduleRefresh() {
  if (state.timer) clearTimeout(state.timer);
  const running = (state.videos || []).filter(RUNNING_FILTER);
  if (!running.length || !(location.hash.replace("#", "") in { videos: 1, "": 1 })) return;
  state.timer = setTimeout(async () => {
    const fresh = await Promise.all(running.map((v) => api("GET", `/console/api/videos/${v.id}`).catch(() => null)));
    const byId = new Map(fresh.filter(Boolean).map((v) => [v.id, v]));
    state.videos = state.videos.map((v) => byId.get(v.id) || v);
    await showPage([...byId.values()]).catch(() => {});
    scheduleRefresh();
  }, 2000);
}

function renderVideos() {
  const data = state.videos || [];
  const ul = $("video-list");
  // Keep cards whose player is open (re-rendering would reset playback).
  const existing = {};
  ul.querySelectorAll("li.card").forEach((li) => { existing[li.id] = li; });
  const fresh = document.createDocumentFragment();
  data.forEach((v) => {
    const old = existing["video-" + v.id];
    if (old && state.players[v.id] && v.status === "completed" && old.dataset.status === "completed") fresh.appendChild(old);
    else fresh.appendChild(videoCard(v));
  });
  ul.textContent = ""; ul.appendChild(fresh);
  const filtered = $("v-filter").value !== "all" || $("v-search").value.trim() !== "";
  $("videos-empty").hidden = data.length > 0 || filtered || !!state.galleryAfter;
  $("videos-none-match").hidden = data.length > 0 || !filtered || !!state.galleryAfter;
  $("videos-more").hidden = !state.galleryAfter;
}

// A video's own page (/console/videos/{id}): the output large, what made it, what it cost and
// took, and what can be done with it next.
const VIDEO_PATH = /^\/console\/videos\/(video_[A-Za-z0-9_-]+)$/;
function videoPagePath() { const m = location.pathname.match(VIDEO_PATH); return m ? m[1] : null; }
function videoPageUrl(id) { return "/console/videos/" + encodeURIComponent(id); }

function takeReusedSettings() {
  const raw = sessionStorage.getItem("reelgate.reuse");
  sessionStorage.removeItem("reelgate.reuse");
  try { return raw ? JSON.parse(raw) : null; } catch (_) { return null; }
}

async function loadVideoPage(id) {
  if (state.videoTimer) { clearTimeout(state.videoTimer); state.videoTimer = null; }
  if (!state.models) state.models = await api("GET", "/console/api/models");
  let v;
  try { v = await api("GET", `/console/api/videos/${encodeURIComponent(id)}`); } catch (err) {
    if (err.status === 404) { renderMissingVideo(id); return; }
    throw err;
  }
  await renderVideoPage(v);
  if (!TERMINAL.includes(v.status) && videoPagePath() === id) {
    state.videoTimer = setTimeout(() => { loadVideoPage(id).catch(() => {}); }, 2000);
  }
}

function renderMissingVideo(id) {
  $("vp-id").textContent = id; $("vp-title").textContent = t("vp_not_found");
  ["vp-facts", "vp-actions", "vp-media"].forEach((x) => { $(x).textContent = ""; });
  $("vp-status").textContent = ""; $("vp-charge").textContent = ""; $("vp-code").hidden = true;
}

function sourceOf(v) {
  if (v.remixed_from_video_id) return { id: v.remixed_from_video_id, label: "vp_remix_of", op: "remix" };
  if (v.extended_from_video_id) return { id: v.extended_from_video_id, label: "vp_extension_of", op: "extension" };
  if (v.edited_from_video_id) return { id: v.edited_from_video_id, label: "vp_edit_of", op: "edit" };
  return null;
}

function durationText(secs) {
  const m = Math.floor(secs / 60); const s = secs % 60;
  return m ? `${m} min ${s} s` : `${s} s`;
}

async function renderVideoPage(v) {
  state.videoPage = v;
  $("vp-id").textContent = v.id;
  document.title = `${v.id} · reelgate ${t("console")}`;
  $("vp-status").className = "badge " + v.status; $("vp-status").textContent = statusText(v.status);
  $("vp-charge").textContent = chargeText(v);
  $("vp-title").textContent = v.prompt;
  $("vp-error").hidden = !v.error; $("vp-error").textContent = v.error ? jobErrorText(v.error) : "";
  const running = !TERMINAL.includes(v.status);
  $("vp-progress").hidden = !running; $("vp-progress-label").hidden = !running;
  if (running) {
    if (v.progress > 0) $("vp-progress").value = v.progress; else $("vp-progress").removeAttribute("value");
    $("vp-progress-label").textContent = v.progress > 0 ? t("vp_progress").replace("{n}", v.progress) : statusText(v.status);
  }
  // The media box keeps the video's shape in every state.
  const box = $("vp-media"); box.style.aspectRatio = ratioOf(v);
  const [rw, rh] = ratioOf(v).split(" / ").map(Number); box.style.setProperty("--ratio", String(rw / rh));
  const media = v.status === "completed" ? await mediaOf(v.id).catch(() => null) : null;
  const playing = box.querySelector("video");
  if (media && !(playing && playing.dataset.id === v.id)) {
    box.textContent = "";
    const video = document.createElement("video");
    video.controls = true; video.preload = "metadata"; video.playsInline = true; video.src = media.content_url;
    video.dataset.id = v.id; video.setAttribute("aria-label", v.prompt);
    if (media.thumbnail_url) video.poster = media.thumbnail_url;
    box.appendChild(video);
  } else if (!media) {
    box.textContent = "";
    const ph = document.createElement("div"); ph.className = "placeholder"; ph.textContent = statusText(v.status);
    box.appendChild(ph);
  }
  renderFacts(v);
  renderVideoActions(v, media);
  $("vp-code").hidden = false;
  showCode("vp");
}

function renderFacts(v) {
  const dl = $("vp-facts"); dl.textContent = "";
  const add = (label, value) => {
    const dt = document.createElement("dt"); dt.textContent = t(label);
    const dd = document.createElement("dd");
    if (value instanceof Node) dd.appendChild(value); else dd.textContent = value;
    dl.append(dt, dd);
  };
  add("vp_model", v.model);
  add("vp_seconds", `${v.seconds} s`);
  add("vp_ratio", v.aspect_ratio);
  if (v.size) add("vp_size", v.size);
  add(v.status === "completed" ? "vp_charge" : "vp_quote", money(v.cost, v.currency));
  const source = sourceOf(v);
  if (source) {
    const a = document.createElement("a"); a.href = videoPageUrl(source.id);
    a.textContent = t(source.label).replace("{id}", source.id);
    add("vp_source", a);
  }
  if (v.engine_prompt && v.engine_prompt !== v.prompt) add("vp_engine_prompt", v.engine_prompt);
  const inputs = v.inputs || {};
  if (inputs.first_frame) add("vp_first_frame", inputs.first_frame);
  if (inputs.last_frame) add("vp_last_frame", inputs.last_frame);
  [["reference_images", "vp_reference_images"], ["reference_videos", "vp_reference_videos"],
    ["reference_audio", "vp_reference_audio"], ["characters", "vp_characters"]].forEach(([k, label]) => {
    if (inputs[k] && inputs[k].length) add(label, inputs[k].join(", "));
  });
  add("vp_created", when(v.created_at));
  if (v.render_started_at) add("vp_render_started", when(v.render_started_at));
  if (v.completed_at) {
    add("vp_completed", when(v.completed_at));
    add("vp_took", durationText(Math.max(0, v.completed_at - v.created_at)));
  } else {
    add("vp_took", elapsedText(v));
  }
  if (v.expires_at) add("vp_expires", when(v.expires_at));
}

function actionButton(label, onClick, cls) {
  const b = document.createElement("button"); b.type = "button"; b.textContent = t(label);
  if (cls) b.className = cls;
  b.addEventListener("click", onClick);
  return b;
}

function renderVideoActions(v, media) {
  const box = $("vp-actions"); box.textContent = "";
  if (media) {
    const dl = document.createElement("a"); dl.className = "button primary"; dl.href = media.content_url;
    dl.download = v.id + ".mp4"; dl.textContent = t("download");
    box.appendChild(dl);
  }
  const model = (state.models ? state.models.data : []).find((m) => m.id === v.model);
  const offers = (op) => v.status === "completed" && model && model.operations && model.operations[op] !== "unavailable";
  if (offers("remix")) box.appendChild(actionButton("vp_remix", () => openOperation("remix")));
  if (offers("extension") && v.seconds < 60) box.appendChild(actionButton("vp_extend", () => openOperation("extension")));
  if (offers("edit")) box.appendChild(actionButton("vp_edit", () => openOperation("edit")));
  box.appendChild(actionButton("vp_reuse", () => {
    sessionStorage.setItem("reelgate.reuse", JSON.stringify(createBodyOf(v)));
    location.assign("/console/#new");
  }));
  if (v.status === "failed" || v.status === "canceled") box.appendChild(actionButton("vp_retry", () => retryVideo(v)));
  if (!TERMINAL.includes(v.status)) {
    box.appendChild(actionButton("cancel_video", async () => {
      if (!(await askToConfirm("confirm_cancel", "cancel_video"))) return;
      try { await api("POST", `/console/api/videos/${v.id}/cancel`); flash(t("canceled")); } catch (err) { flash(errorText(err), true); }
      await loadVideoPage(v.id);
    }));
  } else {
    box.appendChild(actionButton("delete", async () => {
      if (!(await askToConfirm("confirm_delete", "delete"))) return;
      try { await api("DELETE", `/console/api/videos/${v.id}`); location.assign("/console/#videos"); } catch (err) { flash(errorText(err), true); }
    }, "danger"));
  }
}

// The create request that made `v`, its inputs included (by file and character id).
function createBodyOf(v) {
  const body = { model: v.model, prompt: v.prompt, seconds: v.seconds, aspect_ratio: v.aspect_ratio };
  const i = v.inputs || {};
  const frames = ["first_frame", "last_frame"].filter((role) => i[role]).map((role) => ({ file_id: i[role], role }));
  if (frames.length) body.image_reference = frames;
  const refs = {};
  [["reference_images", "images"], ["reference_videos", "videos"], ["reference_audio", "audio"]].forEach(([k, key]) => {
    if (i[k] && i[k].length) refs[key] = i[k].map((file_id) => ({ file_id }));
  });
  if (Object.keys(refs).length) body.references = refs;
  if (i.characters && i.characters.length) body.characters = i.characters;
  return body;
}

async function retryVideo(v) {
  try {
    const created = await api("POST", "/console/api/videos", createBodyOf(v));
    location.assign(videoPageUrl(created.id));
  } catch (err) { flash(errorText(err), true); }
}

// What the page offers on a completed video, each as the model does it (natively or by
// chaining, per GET /v1/videos/models). The console names the source by id; files are API-only.
const OPERATIONS = {
  remix: { title: "vp_remix", hint: "vp_remix_hint", go: "vp_remix_go" },
  extension: { title: "vp_extend", hint: "vp_extend_hint", go: "vp_extend_go" },
  edit: { title: "vp_edit", hint: "vp_edit_hint", go: "vp_edit_go" },
};

function openOperation(op) {
  const o = OPERATIONS[op]; const v = state.videoPage;
  state.operation = op;
  $("vp-op-title").textContent = t(o.title); $("vp-op-hint").textContent = t(o.hint);
  $("vp-op-submit").textContent = t(o.go);
  $("vp-op-prompt").value = v.prompt;
  const extending = op === "extension";
  $("vp-op-seconds-field").hidden = !extending;
  if (extending) fillSeconds($("vp-op-seconds"), modelOf(v.model), 60 - v.seconds);
  clearErrors($("vp-op-form"));
  $("vp-op-form").hidden = false;
  $("vp-op-prompt").focus();
}

function modelOf(id) { return (state.models ? state.models.data : []).find((m) => m.id === id); }

// The seconds a model renders, as choices: nothing to round, nothing outside the range.
function fillSeconds(select, model, atMost) {
  const current = Number(select.value);
  select.textContent = "";
  const range = model && model.seconds;
  if (!range) return;
  for (let n = range.min; n <= Math.min(range.max, atMost === undefined ? range.max : atMost); n++) {
    const o = document.createElement("option"); o.value = String(n); o.textContent = `${n} s`; select.appendChild(o);
  }
  if (current && select.querySelector(`option[value="${current}"]`)) select.value = String(current);
}

function operationRequest(op, v, prompt, seconds) {
  if (op === "remix") return { path: `/videos/${v.id}/remix`, body: { prompt } };
  if (op === "extension") return { path: "/videos/extensions", body: { video: { id: v.id }, prompt, seconds } };
  return { path: "/videos/edits", body: { video: { id: v.id }, prompt } };
}

// The console's own routes for the same operations: the source is the video in the path.
function consoleOperationRequest(op, v, prompt, seconds) {
  if (op === "remix") return { path: `/videos/${v.id}/remix`, body: { prompt } };
  if (op === "extension") return { path: `/videos/${v.id}/extend`, body: { prompt, seconds } };
  return { path: `/videos/${v.id}/edit`, body: { prompt } };
}

async function submitOperation(ev) {
  ev.preventDefault();
  const v = state.videoPage; const op = state.operation;
  const form = $("vp-op-form"); clearErrors(form);
  const seconds = op === "extension" ? Number($("vp-op-seconds").value) : undefined;
  const req = consoleOperationRequest(op, v, $("vp-op-prompt").value, seconds);
  $("vp-op-submit").disabled = true;
  try {
    const created = await api("POST", "/console/api" + req.path, req.body);
    location.assign(videoPageUrl(created.id));
  } catch (err) {
    const field = { prompt: "err-vp-op-prompt", seconds: "err-vp-op-seconds" }[err.param] || "err-vp-op";
    $(field).textContent = errorText(err);
  } finally { $("vp-op-submit").disabled = false; }
}

// "View code": the request that made the video, as curl, Python (openai) and Node, the key a
// placeholder. Each string is quoted for its language, never spliced in raw.
function madeBy(v) {
  const source = sourceOf(v);
  if (!source) return { kind: "create", path: "/videos", body: createBodyOf(v) };
  if (source.op === "remix") return { kind: "remix", source: source.id, ...operationRequest("remix", { id: source.id }, v.prompt) };
  if (source.op === "extension") {
    const added = v.seconds - (v.source_seconds || 0);
    return { kind: "extension", ...operationRequest("extension", { id: source.id }, v.prompt, added) };
  }
  return { kind: "edit", ...operationRequest("edit", { id: source.id }, v.prompt) };
}

const shellQuote = (s) => "'" + String(s).replace(/'/g, "'\\''") + "'";
const pyString = (s) => JSON.stringify(String(s));

// A JSON value as a Python literal (JSON's strings are valid Python strings).
function pyLiteral(value, indent = "") {
  const inner = indent + "    ";
  if (value === null || value === undefined) return "None";
  if (value === true) return "True";
  if (value === false) return "False";
  if (typeof value === "number") return String(value);
  if (typeof value === "string") return JSON.stringify(value);
  if (Array.isArray(value)) {
    if (!value.length) return "[]";
    return "[\n" + value.map((v) => inner + pyLiteral(v, inner)).join(",\n") + ",\n" + indent + "]";
  }
  const keys = Object.keys(value);
  if (!keys.length) return "{}";
  return "{\n" + keys.map((k) => `${inner}${JSON.stringify(k)}: ${pyLiteral(value[k], inner)}`).join(",\n") + ",\n" + indent + "}";
}

// Keyword arguments for a Python SDK call: the SDK's own parameters by name, the rest (what
// only reelgate takes) in extra_body.
function pyArgs(body, known) {
  const args = []; const extra = {};
  Object.entries(body).forEach(([k, v]) => { if (known.includes(k)) args.push(`    ${k}=${pyLiteral(v, "    ")},`); else extra[k] = v; });
  if (Object.keys(extra).length) args.push(`    extra_body=${pyLiteral(extra, "    ")},`);
  return "(\n" + args.join("\n") + "\n)";
}

// The request a code box shows, as { kind, path, body, source }: the one that made the video
// on its page, the one New video would send, the chat's last (or next) request.
function videoCreateBody(body) { return { ...body, seconds: String(body.seconds) }; }

function codeFor(req, lang) {
  const base = location.origin + "/v1";
  if (lang === "curl") {
    return `curl ${shellQuote(base + req.path)} \\\n  -H "Authorization: Bearer $REELGATE_API_KEY" \\\n` +
      `  -H "Content-Type: application/json" \\\n  -d ${shellQuote(JSON.stringify(req.body))}` +
      (req.kind === "chat" && req.body.stream ? " \\\n  --no-buffer" : "");
  }
  const b = req.body;
  if (lang === "python") {
    const head = `import os\nfrom openai import OpenAI\n\nclient = OpenAI(base_url=${pyString(base)}, api_key=os.environ["REELGATE_API_KEY"])\n`;
    if (req.kind === "chat") {
      const call = `client.chat.completions.create${pyArgs(b, ["model", "messages", "stream", "stream_options", "temperature", "max_tokens", "reasoning_effort"])}`;
      return b.stream
        ? `${head}stream = ${call}\nfor chunk in stream:\n    if chunk.choices and chunk.choices[0].delta.content:\n        print(chunk.choices[0].delta.content, end="", flush=True)\nprint()`
        : `${head}completion = ${call}\nprint(completion.choices[0].message.content)`;
    }
    let call;
    if (req.kind === "create") call = `client.videos.create${pyArgs(videoCreateBody(b), ["model", "prompt", "seconds"])}`;
    else if (req.kind === "remix") call = `client.videos.remix(${pyString(req.source)}, prompt=${pyString(b.prompt)})`;
    else if (req.kind === "extension") call = `client.videos.extend(video={"id": ${pyString(b.video.id)}}, prompt=${pyString(b.prompt)}, seconds=${pyString(b.seconds)})`;
    else call = `client.videos.edit(video={"id": ${pyString(b.video.id)}}, prompt=${pyString(b.prompt)})`;
    return `${head}video = ${call}\nprint(video.id, video.status)`;
  }
  const head = `import OpenAI from "openai";\n\nconst client = new OpenAI({ baseURL: ${JSON.stringify(base)}, apiKey: process.env.REELGATE_API_KEY });\n`;
  if (req.kind === "chat") {
    const call = `client.chat.completions.create(${JSON.stringify(b, null, 2)})`;
    return b.stream
      ? `${head}const stream = await ${call};\nfor await (const chunk of stream) process.stdout.write(chunk.choices[0]?.delta?.content ?? "");\nprocess.stdout.write("\\n");`
      : `${head}const completion = await ${call};\nconsole.log(completion.choices[0].message.content);`;
  }
  let call;
  if (req.kind === "create") call = `client.videos.create(${JSON.stringify(videoCreateBody(b), null, 2)})`;
  else if (req.kind === "remix") call = `client.videos.remix(${JSON.stringify(req.source)}, ${JSON.stringify(b)})`;
  else if (req.kind === "extension") call = `client.videos.extend(${JSON.stringify({ ...b, seconds: String(b.seconds) }, null, 2)})`;
  else call = `client.videos.edit(${JSON.stringify(b, null, 2)})`;
  return `${head}const video = await ${call};\nconsole.log(video.id, video.status);`;
}

// Fills each `<details class="code-box">` of the page (its id `<prefix>-code`, its hint's text
// key in `data-hint`) with the tabs, the code and Copy, named after the prefix.
function buildCodeBoxes() {
  document.querySelectorAll("details.code-box").forEach((box) => {
    const prefix = box.id.replace(/-code$/, "");
    const el = (tag, attrs, key) => {
      const e = document.createElement(tag);
      Object.entries(attrs).forEach(([k, v]) => e.setAttribute(k, v));
      if (key) e.dataset.i18n = key;
      return e;
    };
    const tabs = el("div", { class: "tabs", role: "tablist" });
    [["curl", "curl"], ["python", "Python"], ["node", "Node"]].forEach(([lang, name], i) => {
      const b = el("button", { type: "button", role: "tab", id: `${prefix}-code-${lang}`, "aria-selected": String(i === 0), "data-lang": lang });
      b.textContent = name; tabs.appendChild(b);
    });
    box.append(el("summary", {}, "view_code"), el("p", { class: "hint" }, box.dataset.hint), tabs,
      el("pre", { id: `${prefix}-code-text`, tabindex: "0", "aria-label": "Code" }),
      el("button", { type: "button", id: `${prefix}-code-copy` }, "copy"));
  });
}

// Each code box, by its id's prefix, with the request it shows now.
const CODE_BOXES = {
  vp: () => (state.videoPage ? madeBy(state.videoPage) : null),
  nv: () => ({ kind: "create", path: "/videos", body: formBody() }),
  cc: () => ({ kind: "chat", path: "/chat/completions", body: state.lastChatRequest || chatRequest($("c-message").value || "Hello") }),
};

function showCode(box, lang) {
  state.codeLang = lang || state.codeLang || "curl";
  ["curl", "python", "node"].forEach((l) => { $(`${box}-code-${l}`).setAttribute("aria-selected", String(l === state.codeLang)); });
  const req = CODE_BOXES[box]();
  if (req) $(`${box}-code-text`).textContent = codeFor(req, state.codeLang);
}

// Chat: a conversation. Every turn sends the system prompt and all earlier turns.
async function loadChat() {
  if (!state.chatModels) state.chatModels = await api("GET", "/console/api/chat/models");
  const sel = $("c-model"); const current = sel.value;
  sel.textContent = "";
  state.chatModels.data.forEach((m) => { const o = document.createElement("option"); o.value = m.id; o.textContent = m.id; sel.appendChild(o); });
  if (current) sel.value = current;
  if (!state.chatRestored) restoreChat();
  updateEffort();
  renderChat();
  followChat();
}

// The conversation and the unsent draft are kept in this browser (per organization), so a
// refresh loses neither. Images are kept with their turn when they fit the browser's storage.
// Conversations and their unsent drafts are kept in this browser (per organization; sign-out
// forgets them), so a refresh loses nothing and earlier chats can be reopened. Images are kept
// with their turn when they fit the browser's storage.
function chatStoreKey() { return `reelgate.chats.${state.session.organization.id}`; }
const MAX_KEPT_CHATS = 30;

function readChats() {
  let kept = null;
  try { kept = JSON.parse(localStorage.getItem(chatStoreKey()) || "null"); } catch (_) { kept = null; }
  if (!kept || !Array.isArray(kept.chats)) kept = { current: null, chats: [] };
  // The one conversation an earlier version kept becomes the first past chat.
  const earlier = `reelgate.chat.${state.session.organization.id}`;
  try {
    const one = JSON.parse(localStorage.getItem(earlier) || "null");
    if (one && Array.isArray(one.turns)) {
      kept.chats.unshift({ id: "c-earlier", title: chatTitle(one.turns), updated: Date.now(), ...one });
      kept.current = kept.current || "c-earlier";
    }
    localStorage.removeItem(earlier);
  } catch (_) { /* nothing to carry over */ }
  return kept;
}

function writeChats(kept) {
  kept.chats = kept.chats.slice(0, MAX_KEPT_CHATS);
  try { localStorage.setItem(chatStoreKey(), JSON.stringify(kept)); return; } catch (_) { /* over the quota */ }
  // Over the browser's quota (large images): keep the words, drop the pictures.
  kept.chats = kept.chats.map((c) => ({ ...c, turns: c.turns.map((turn) => ({ ...turn, image: null, content: turn.text })) }));
  try { localStorage.setItem(chatStoreKey(), JSON.stringify(kept)); } catch (__) { /* nothing kept */ }
}

function chatTitle(turns) {
  const first = turns.find((turn) => turn.role === "user");
  const text = first ? String(first.text || "").trim().replace(/\s+/g, " ") : "";
  return text ? (text.length > 60 ? text.slice(0, 57) + "…" : text) : "";
}

function saveChat() {
  const turns = state.chat.filter((turn) => !turn.pending).map((turn) => ({
    role: turn.role, content: turn.content, text: turn.text, image: turn.image, model: turn.model, usageText: turn.usageText,
  }));
  const kept = readChats();
  if (!state.chatId) state.chatId = "c" + Date.now().toString(36) + Math.random().toString(36).slice(2, 6);
  const chat = { id: state.chatId, title: chatTitle(turns), updated: Date.now(), model: $("c-model").value,
    system: $("c-system").value, draft: $("c-message").value, turns };
  // A chat with no turns is not listed, but its draft is kept; an empty one is not kept.
  const empty = !turns.length && !chat.draft && !chat.system;
  kept.chats = [...(empty ? [] : [chat]), ...kept.chats.filter((c) => c.id !== chat.id)];
  kept.current = chat.id;
  writeChats(kept);
  renderChatList(kept);
}

function openChat(chat) {
  state.chatId = chat ? chat.id : null;
  state.chat = chat ? chat.turns.filter((turn) => turn && (turn.role === "user" || turn.role === "assistant")) : [];
  state.lastChatRequest = null;
  if (chat && chat.model && [...$("c-model").options].some((o) => o.value === chat.model)) $("c-model").value = chat.model;
  // A new chat keeps the system prompt and settings: often the next conversation uses them too.
  if (chat) $("c-system").value = chat.system || "";
  $("c-message").value = chat ? chat.draft || "" : "";
}

function restoreChat() {
  state.chatRestored = true;
  const kept = readChats();
  openChat(kept.chats.find((c) => c.id === kept.current) || null);
  renderChatList(kept);
}

function renderChatList(kept) {
  const list = $("c-history"); list.textContent = "";
  const listed = kept.chats.filter((c) => c.turns.length);
  $("c-history-box").hidden = listed.length === 0;
  listed.forEach((c) => {
    const li = document.createElement("li");
    const open = document.createElement("button"); open.type = "button"; open.className = "link chat-open";
    open.textContent = c.title || t("untitled_chat");
    if (c.id === state.chatId) open.setAttribute("aria-current", "true");
    const meta = document.createElement("span"); meta.className = "meta"; meta.textContent = when(Math.floor(c.updated / 1000));
    open.addEventListener("click", () => switchChat(c.id));
    const rm = document.createElement("button"); rm.type = "button"; rm.className = "link danger"; rm.textContent = "×";
    rm.setAttribute("aria-label", `${t("delete_chat")}: ${c.title || t("untitled_chat")}`);
    rm.addEventListener("click", () => deleteChat(c.id));
    li.append(open, meta, rm);
    list.appendChild(li);
  });
}

function switchChat(id) {
  if (state.chatBusy && state.chatAbort) state.chatAbort.abort();
  saveChat();
  const kept = readChats();
  openChat(kept.chats.find((c) => c.id === id) || null);
  kept.current = state.chatId; writeChats(kept);
  clearErrors($("chat-form")); clearErrors($("chat-settings")); clearChatImage();
  updateEffort(); renderChat(); renderChatList(kept); followChat();
}

async function deleteChat(id) {
  if (!(await askToConfirm("confirm_delete_chat", "delete"))) return;
  const kept = readChats();
  kept.chats = kept.chats.filter((c) => c.id !== id);
  if (id === state.chatId) { openChat(null); kept.current = null; renderChat(); }
  writeChats(kept);
  renderChatList(kept);
}

// Keeps the newest words in view while a reply streams, unless the person scrolled up to read.
function chatAtBottom() {
  return window.innerHeight + window.scrollY >= document.documentElement.scrollHeight - 48;
}
function followChat() { window.scrollTo({ top: document.documentElement.scrollHeight }); }

function chatModel() {
  return (state.chatModels ? state.chatModels.data : []).find((x) => x.id === $("c-model").value);
}

function updateEffort() {
  const m = chatModel();
  const efforts = (m && m.reasoning_efforts) || [];
  $("c-effort-field").hidden = efforts.length === 0;
  // Image attachments only where the model has vision.
  const vision = !!m && (m.capabilities || []).includes("vision");
  $("c-image-field").hidden = !vision;
  if (!vision) clearChatImage();
  const sel = $("c-effort"); const was = sel.value; sel.textContent = "";
  const d = document.createElement("option"); d.value = ""; d.textContent = t("default_effort"); sel.appendChild(d);
  efforts.forEach((e) => { const o = document.createElement("option"); o.value = e; o.textContent = e; sel.appendChild(o); });
  if (efforts.includes(was)) sel.value = was;
}

function clearChatImage() {
  state.chatImage = null;
  $("c-image").value = "";
  $("c-image-preview").removeAttribute("src");
  $("c-image-chosen").hidden = true;
}

function readAsDataUrl(file) {
  return new Promise((resolve, reject) => {
    const r = new FileReader();
    r.addEventListener("load", () => resolve(String(r.result)));
    r.addEventListener("error", () => reject(r.error));
    r.readAsDataURL(file);
  });
}

// The chosen image goes with the next message as an `image_url` part (a base64 data URL).
async function chooseChatImage() {
  $("err-c-image").textContent = "";
  const file = ($("c-image").files || [])[0];
  if (!file) { clearChatImage(); return; }
  try {
    const url = await readAsDataUrl(file);
    state.chatImage = { url, name: file.name };
    const img = $("c-image-preview"); img.src = url; img.alt = file.name;
    $("c-image-chosen").hidden = false;
  } catch (err) { clearChatImage(); $("err-c-image").textContent = String(err && err.message ? err.message : err); }
}

// A reply's markdown as DOM nodes built one by one: fenced code blocks (with Copy), headings,
// lists, quotes, paragraphs, and inline code, bold, italics and http(s) links. Text always goes
// in as text (textContent), never as HTML, so markup from a model shows as the characters it is.
function renderMarkdown(text) {
  const root = document.createDocumentFragment();
  const lines = String(text).split("\n");
  let i = 0; let para = [];
  const flush = () => {
    if (para.length) { const p = document.createElement("p"); inline(p, para.join("\n")); root.appendChild(p); para = []; }
  };
  while (i < lines.length) {
    const line = lines[i];
    const fence = line.match(/^\s*```\s*([\w+-]*)\s*$/);
    if (fence) {
      flush();
      const code = []; i += 1;
      while (i < lines.length && !/^\s*```\s*$/.test(lines[i])) { code.push(lines[i]); i += 1; }
      i += 1;
      const box = document.createElement("div"); box.className = "md-code";
      const pre = document.createElement("pre"); const c = document.createElement("code");
      c.textContent = code.join("\n"); if (fence[1]) c.dataset.lang = fence[1];
      pre.appendChild(c);
      const copy = document.createElement("button"); copy.type = "button"; copy.className = "md-copy";
      copy.textContent = t("copy"); copy.addEventListener("click", () => copyText(c.textContent));
      box.append(pre, copy); root.appendChild(box);
      continue;
    }
    const heading = line.match(/^(#{1,6})\s+(.*)$/);
    const item = line.match(/^\s*(?:[-*+]|(\d+)[.)])\s+(.*)$/);
    if (heading) {
      flush();
      const h = document.createElement("h" + Math.min(6, heading[1].length + 2)); inline(h, heading[2]); root.appendChild(h);
    } else if (item) {
      flush();
      const list = document.createElement(item[1] ? "ol" : "ul");
      while (i < lines.length) {
        const m = lines[i].match(/^\s*(?:[-*+]|(\d+)[.)])\s+(.*)$/);
        if (!m || Boolean(m[1]) !== Boolean(item[1])) break;
        const li = document.createElement("li"); inline(li, m[2]); list.appendChild(li); i += 1;
      }
      root.appendChild(list); continue;
    } else if (/^>\s?/.test(line)) {
      flush();
      const q = document.createElement("blockquote"); inline(q, line.replace(/^>\s?/, "")); root.appendChild(q);
    } else if (!line.trim()) {
      flush();
    } else {
      para.push(line);
    }
    i += 1;
  }
  flush();
  return root;
}

function inline(parent, text) {
  const pattern = /(`[^`]+`)|(\*\*[^*]+\*\*)|(\*[^*\s][^*]*\*)|(\[[^\]]+\]\((https?:\/\/[^\s)]+)\))/g;
  let last = 0; let m;
  while ((m = pattern.exec(text))) {
    if (m.index > last) parent.appendChild(document.createTextNode(text.slice(last, m.index)));
    let node;
    if (m[1]) { node = document.createElement("code"); node.textContent = m[1].slice(1, -1); }
    else if (m[2]) { node = document.createElement("strong"); node.textContent = m[2].slice(2, -2); }
    else if (m[3]) { node = document.createElement("em"); node.textContent = m[3].slice(1, -1); }
    else {
      node = document.createElement("a"); node.href = m[5]; node.rel = "noopener noreferrer"; node.target = "_blank";
      node.textContent = m[4].slice(1, m[4].indexOf("]"));
    }
    parent.appendChild(node); last = pattern.lastIndex;
  }
  if (last < text.length) parent.appendChild(document.createTextNode(text.slice(last)));
}

function showReply(el, turn) {
  el.textContent = "";
  if (turn.role === "assistant") el.appendChild(renderMarkdown(turn.text || "")); else el.textContent = turn.text || "";
}

function messageItem(turn) {
  const li = document.createElement("li"); li.className = "msg " + turn.role;
  const who = document.createElement("div"); who.className = "who";
  who.textContent = turn.role === "user" ? t("you") : `${t("assistant")} · ${turn.model || ""}`;
  const content = document.createElement("div"); content.className = "content";
  showReply(content, turn);
  li.append(who, content);
  if (turn.image) {
    const img = document.createElement("img"); img.src = turn.image.url; img.alt = `${t("attached_image")}: ${turn.image.name}`;
    img.className = "msg-image"; li.appendChild(img);
  }
  if (turn.role === "assistant") {
    const usage = document.createElement("div"); usage.className = "usage meta"; usage.textContent = turn.usageText || "";
    li.appendChild(usage);
  }
  turn.el = li;
  return li;
}

function renderChat() {
  const log = $("c-log"); log.textContent = "";
  state.chat.forEach((turn) => log.appendChild(messageItem(turn)));
  $("c-empty").hidden = state.chat.length > 0;
  log.hidden = state.chat.length === 0;
}

// A new conversation; the one open stays in the list of past chats.
function newChat() {
  if (state.chatAbort) state.chatAbort.abort();
  if (state.chat.length) saveChat();
  openChat(null);
  clearErrors($("chat-form")); clearErrors($("chat-settings")); clearChatImage();
  const kept = readChats(); kept.current = null; writeChats(kept);
  renderChat(); renderChatList(kept);
  $("c-message").focus();
}

// A turn's token usage and what it cost: the charge the answer reports (`usage.cost`), else the
// model's catalog prices applied to the counts.
function usageText(usage, model) {
  const p = (model && model.pricing) || {};
  const prompt = usage.prompt_tokens || 0; const out = usage.completion_tokens || 0;
  const details = usage.prompt_tokens_details || {};
  const cached = details.cached_tokens || 0; const written = details.cache_write_tokens || 0;
  const price = (x) => Number(x || 0) / 1e6;
  const cachedPrice = p.cached_input_per_million !== undefined ? p.cached_input_per_million : p.input_per_million;
  const writePrice = p.cache_write_per_million !== undefined ? p.cache_write_per_million : p.input_per_million;
  const cost = usage.cost !== undefined ? usage.cost
    : ((prompt - cached - written) * price(p.input_per_million) + cached * price(cachedPrice)
      + written * price(writePrice) + out * price(p.output_per_million)).toFixed(8);
  // A model without prices (found by listing an upstream, or priced at zero) is not "0.00 USD"
  // but a price nobody has set.
  const priced = Number(p.input_per_million || 0) > 0 || Number(p.output_per_million || 0) > 0;
  return t("turn_usage").replace("{input}", prompt.toLocaleString(state.lang)).replace("{output}", out.toLocaleString(state.lang))
    .replace("{cost}", priced ? money(cost, p.currency) : t("price_unknown"));
}

// The request the chat sends for a new user message: the system prompt, every earlier turn,
// the message, and the settings.
function chatRequest(content) {
  const messages = [];
  if ($("c-system").value.trim()) messages.push({ role: "system", content: $("c-system").value });
  state.chat.filter((turn) => !turn.pending).forEach((turn) => messages.push({ role: turn.role, content: turn.content }));
  messages.push({ role: "user", content });
  const body = { model: $("c-model").value, stream: true, stream_options: { include_usage: true }, messages };
  const temperature = $("c-temperature").value.trim();
  if (temperature !== "") body.temperature = Number.isNaN(Number(temperature)) ? temperature : Number(temperature);
  const maxTokens = $("c-max-tokens").value.trim();
  if (maxTokens !== "") body.max_tokens = /^\d+$/.test(maxTokens) ? Number(maxTokens) : maxTokens;
  if (!$("c-effort-field").hidden && $("c-effort").value) body.reasoning_effort = $("c-effort").value;
  return body;
}

async function sendChat(ev) {
  if (ev) ev.preventDefault();
  if (state.chatBusy) return;
  const form = $("chat-form"); clearErrors(form); clearErrors($("chat-settings"));
  const text = $("c-message").value;
  const image = !$("c-image-field").hidden && state.chatImage;
  if (!text.trim() && !image) { $("err-messages").textContent = t("message_required"); $("c-message").focus(); return; }
  const model = chatModel();
  const content = image
    ? [{ type: "text", text }, { type: "image_url", image_url: { url: image.url } }]
    : text;
  const userTurn = { role: "user", content, text, image: image ? { url: image.url, name: image.name } : null };
  const body = chatRequest(content);
  state.chat.push(userTurn);
  state.lastChatRequest = body;
  if ($("cc-code").open) showCode("cc");
  const reply = { role: "assistant", content: "", text: "", model: body.model, pending: true };
  state.chat.push(reply);
  $("c-message").value = ""; clearChatImage();
  renderChat();
  followChat();
  const out = reply.el.querySelector(".content");
  const button = $("c-send"); button.disabled = true; state.chatBusy = true;
  const abort = new AbortController(); state.chatAbort = abort;
  $("c-stop").hidden = false;
  $("c-stop").onclick = () => { reply.stopped = true; abort.abort(); };
  try {
    const r = await fetch("/console/api/chat/completions", {
      method: "POST", credentials: "same-origin", signal: abort.signal,
      headers: { "Content-Type": "application/json", "X-CSRF-Token": state.session.csrf_token },
      body: JSON.stringify(body),
    });
    if (!r.ok) {
      let data = null; try { data = await r.json(); } catch (_) { data = null; }
      if (r.status === 401) sessionEnded();
      throw new ApiError(r.status, data);
    }
    const reader = r.body.getReader(); const decoder = new TextDecoder();
    let buffer = ""; let streamError = null;
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const event = buffer.slice(0, cut); buffer = buffer.slice(cut + 2);
        event.split("\n").forEach((line) => {
          if (!line.startsWith("data:")) return;
          const data = line.slice(5).trim();
          if (!data || data === "[DONE]") return;
          try {
            const chunk = JSON.parse(data);
            if (chunk.error) { streamError = chunk.error; return; }
            (chunk.choices || []).forEach((c) => {
              if (c.delta && c.delta.content) {
                const follow = chatAtBottom();
                reply.text += c.delta.content; showReply(out, reply);
                if (follow) followChat();
              }
            });
            if (chunk.usage) {
              reply.usageText = usageText(chunk.usage, model);
              reply.el.querySelector(".usage").textContent = reply.usageText;
            }
          } catch (_) { /* a partial line is completed by the next read */ }
        });
      }
    }
    reply.content = reply.text;
    if (streamError) throw new ApiError(200, { error: streamError });
    reply.pending = false;
    saveChat();
  } catch (err) {
    if (err.name === "AbortError") {
      // Stopped: what arrived stays in the conversation (and is sent as the turn's answer).
      if (reply.stopped) {
        reply.content = reply.text; reply.pending = false;
        reply.usageText = t("stopped");
        if (reply.el) reply.el.querySelector(".usage").textContent = reply.usageText;
        saveChat();
        $("c-message").focus();
      }
      return;
    }
    // The failed turn leaves the conversation; its words go back into the box to retry.
    state.chat = state.chat.filter((turn) => turn !== reply && turn !== userTurn);
    renderChat();
    $("c-message").value = text;
    if (userTurn.image) {
      state.chatImage = userTurn.image; $("c-image-preview").src = userTurn.image.url;
      $("c-image-preview").alt = userTurn.image.name; $("c-image-chosen").hidden = false;
    }
    const map = { model: "err-chat-model", messages: "err-messages", temperature: "err-temperature", max_tokens: "err-max_tokens" };
    const full = String(err.param || "");
    const param = full.split(/[.[]/)[0];
    const aboutImage = image && (full.includes("image_url") || /\.content\[1\]/.test(full) || err.status === 413);
    ($(aboutImage ? "err-c-image" : map[param]) || $("err-messages")).textContent = errorText(err);
  } finally {
    button.disabled = false; state.chatBusy = false;
    $("c-stop").hidden = true; $("c-stop").onclick = null;
    if (state.chatAbort === abort) state.chatAbort = null;
  }
}

// Keys
async function loadKeys() {
  const keys = await api("GET", "/console/api/keys");
  const ul = $("key-list"); ul.textContent = "";
  $("keys-empty").hidden = keys.data.length > 0;
  keys.data.forEach((k) => {
    const li = document.createElement("li"); li.className = "card"; li.id = "key-" + k.id;
    const name = document.createElement("h2"); name.className = "sub key-name"; name.textContent = k.name || t("unnamed");
    li.appendChild(name);
    const meta = document.createElement("div"); meta.className = "meta";
    const used = k.last_used_at ? `${t("last_used")} ${when(k.last_used_at)}` : t("never_used");
    meta.textContent = `${k.id} · ${t("created_at")} ${when(k.created_at)} · ${used} · ${k.revoked ? t("revoked") : t("active")}`;
    li.appendChild(meta);
    if (!k.revoked) {
      const actions = document.createElement("div"); actions.className = "actions";
      const b = document.createElement("button"); b.type = "button"; b.className = "danger"; b.textContent = t("revoke");
      b.setAttribute("aria-label", `${t("revoke")} ${k.id}`);
      b.addEventListener("click", () => revokeKey(k.id));
      actions.appendChild(b); li.appendChild(actions);
      const limits = document.createElement("div"); limits.className = "limits"; limits.id = "lim-" + k.id;
      li.appendChild(limits);
    }
    ul.appendChild(li);
  });
  await Promise.all(keys.data.filter((k) => !k.revoked).map((k) => loadKeyLimits(k.id)));
}

const LIMIT_FIELDS = ["requests_per_minute", "tokens_per_minute", "video_creates_per_minute"];

// A key's limits and budget, and a form to change them (the server checks every value).
async function loadKeyLimits(id) {
  const box = $("lim-" + id);
  if (!box) return;
  let c;
  try { c = await api("GET", `/console/api/keys/${id}/limits`); } catch (err) { box.textContent = err.message; return; }
  renderKeyLimits(box, c);
}

function renderKeyLimits(box, c) {
  const id = c.id;
  const open = box.querySelector("details") && box.querySelector("details").open;
  box.textContent = "";
  const h = document.createElement("h2"); h.className = "sub"; h.textContent = t("lim_title"); box.appendChild(h);
  const dl = document.createElement("dl"); dl.className = "limit-list";
  const row = (label, value, note, name) => {
    const dt = document.createElement("dt"); dt.textContent = label;
    const dd = document.createElement("dd"); dd.dataset.limit = name;
    const v = document.createElement("strong"); v.textContent = value; dd.appendChild(v);
    if (note) { const n = document.createElement("span"); n.className = "meta"; n.textContent = " · " + note; dd.appendChild(n); }
    dl.append(dt, dd);
  };
  LIMIT_FIELDS.forEach((f) => {
    const l = c[f];
    const value = l.effective === null ? t("lim_unlimited") : String(l.effective);
    const note = l.source === "key"
      ? `${t("lim_from_key")} (${t("lim_from_plan")}: ${l.plan === null ? t("lim_unlimited") : l.plan})`
      : t("lim_from_plan");
    row(t("lim_" + f), value, note, f);
  });
  row(t("lim_monthly_budget"), c.monthly_budget === null ? t("lim_no_budget") : money(c.monthly_budget, c.currency),
      c.monthly_budget === null ? "" : `${t("lim_committed")}: ${money(c.committed, c.currency)}`, "monthly_budget");
  box.appendChild(dl);

  const details = document.createElement("details"); details.open = !!open;
  const summary = document.createElement("summary"); summary.textContent = t("lim_edit");
  summary.setAttribute("aria-label", `${t("lim_edit")} ${id}`);
  details.appendChild(summary);
  const form = document.createElement("form"); form.noValidate = true;
  const hint = document.createElement("p"); hint.className = "hint"; hint.textContent = t("lim_hint"); form.appendChild(hint);
  const fields = document.createElement("div"); fields.className = "row";
  [...LIMIT_FIELDS, "monthly_budget"].forEach((f) => {
    const wrap = document.createElement("div"); wrap.className = "field";
    const inputId = `lim-${id}-${f}`;
    const label = document.createElement("label"); label.htmlFor = inputId; label.textContent = t("lim_" + f);
    const input = document.createElement("input"); input.id = inputId; input.name = f; input.type = "text";
    input.inputMode = f === "monthly_budget" ? "decimal" : "numeric"; input.autocomplete = "off";
    if (f === "monthly_budget") {
      input.value = c.monthly_budget === null ? "" : c.monthly_budget;
      input.placeholder = t("lim_no_budget");
    } else {
      input.value = c[f].key === null ? "" : String(c[f].key);
      input.placeholder = c[f].plan === null ? t("lim_unlimited") : `${t("lim_from_plan")}: ${c[f].plan}`;
    }
    const err = document.createElement("p"); err.className = "field-error"; err.id = `err-lim-${id}-${f}`; err.setAttribute("role", "alert");
    input.setAttribute("aria-describedby", err.id);
    wrap.append(label, input, err); fields.appendChild(wrap);
  });
  form.appendChild(fields);
  const other = document.createElement("p"); other.className = "field-error"; other.id = `err-lim-${id}`; other.setAttribute("role", "alert");
  const save = document.createElement("button"); save.type = "submit"; save.className = "primary"; save.textContent = t("lim_save");
  save.setAttribute("aria-label", `${t("lim_save")} ${id}`);
  form.append(other, save);
  form.addEventListener("submit", (e) => { e.preventDefault(); saveKeyLimits(box, id, form, save); });
  details.appendChild(form);
  box.appendChild(details);
}

async function saveKeyLimits(box, id, form, button) {
  clearErrors(form);
  const body = {};
  LIMIT_FIELDS.forEach((f) => {
    const raw = form.elements[f].value.trim();
    // Whole numbers go as numbers; anything else is sent as typed and the server names the field.
    body[f] = raw === "" ? null : (/^\d+$/.test(raw) ? Number(raw) : raw);
  });
  const budget = form.elements.monthly_budget.value.trim();
  body.monthly_budget = budget === "" ? null : budget;
  button.disabled = true;
  try {
    const c = await api("POST", `/console/api/keys/${id}/limits`, body);
    renderKeyLimits(box, c);
    flash(t("lim_saved"));
  } catch (err) {
    const param = String(err.param || "");
    const target = $(`err-lim-${id}-${param}`) || $(`err-lim-${id}`);
    target.textContent = err.message;
    if (form.elements[param]) form.elements[param].setAttribute("aria-invalid", "true");
  } finally { button.disabled = false; }
}

async function createKey(ev) {
  if (ev) ev.preventDefault();
  const form = $("key-form"); clearErrors(form);
  $("err-keys").textContent = "";
  const name = $("key-name").value.trim();
  try {
    const k = await api("POST", "/console/api/keys", name ? { name } : {});
    form.reset();
    $("key-secret").hidden = false;
    const input = $("key-secret-value"); input.value = k.secret; input.focus(); input.select();
    await loadKeys();
  } catch (err) {
    if (err.param === "name") { $("err-name").textContent = errorText(err); $("key-name").setAttribute("aria-invalid", "true"); }
    else $("err-keys").textContent = errorText(err);
  }
}

async function revokeKey(id) {
  if (!(await askToConfirm("confirm_revoke", "revoke_go"))) return;
  try { await api("DELETE", `/console/api/keys/${id}`); await loadKeys(); } catch (err) { $("err-keys").textContent = errorText(err); }
}

// Webhooks
function when(secs) { return new Date(secs * 1000).toLocaleString(state.lang); }

// "Send test event": its words in both languages, kept with the page.
Object.assign(TEXT.en, {
  wh_test: "Send test event", wh_testing: "Sending a test event…",
  wh_test_delivered: "Test event delivered: HTTP {status} in {ms} ms.",
  wh_test_answered: "Test event not accepted: the receiver answered HTTP {status} in {ms} ms (a real event would be retried).",
  wh_test_failed: "Test event not delivered ({ms} ms): {error}", wh_test_event_id: "event {id}",
  wh_test_err_url_refused: "Refused: the URL points to a private, loopback, link-local or metadata address, which webhooks may not reach.",
  wh_test_err_timeout: "Timed out: the receiver did not answer within 10 seconds.",
  wh_test_err_unreachable: "Could not connect: the connection was refused, or the host could not be found or reached.",
  wh_test_err_bad_url: "The URL is not an absolute http or https URL.",
  wh_local_hint: "On this local server, to receive webhooks on this machine while developing: stop `reelgate serve` and start it again with REELGATE_FETCH_ALLOW=localhost,127.0.0.1 in its environment (the host names and addresses to allow, comma-separated). Every other private address stays refused.",
});
Object.assign(TEXT.ja, {
  wh_test: "テストイベントを送信", wh_testing: "テストイベントを送信しています…",
  wh_test_delivered: "テストイベントを配信しました: HTTP {status}({ms} ミリ秒)。",
  wh_test_answered: "テストイベントは受け付けられませんでした: 受信側の応答は HTTP {status}({ms} ミリ秒)です(実際のイベントなら再試行されます)。",
  wh_test_failed: "テストイベントを配信できませんでした({ms} ミリ秒): {error}", wh_test_event_id: "イベント {id}",
  wh_test_err_url_refused: "拒否されました: URL がプライベート・ループバック・リンクローカル・メタデータのアドレスを指しているため、Webhook では送れません。",
  wh_test_err_timeout: "タイムアウト: 受信側が10秒以内に応答しませんでした。",
  wh_test_err_unreachable: "接続できませんでした: 接続が拒否されたか、ホストが見つからないか到達できません。",
  wh_test_err_bad_url: "URL が http または https の絶対 URL ではありません。",
  wh_local_hint: "このローカルサーバーで、開発中にこのマシン上の受信側へ Webhook を届けるには、`reelgate serve` を止め、環境変数 REELGATE_FETCH_ALLOW=localhost,127.0.0.1 を付けて起動し直してください(許可するホスト名とアドレスをカンマ区切りで指定)。それ以外のプライベートアドレスは引き続き拒否されます。",
});

// Whether this is the local server: the server shows the sign-in page's command-line help
// (`reelgate admin console-link`) only there (`console_links_by_cli`).
function localServer() { const cli = $("signin-cli"); return !!cli && !cli.hidden; }

// A webhook error in the console's language. On the local server a refused URL also says how to
// allow a receiver on this machine (the server's English message already ends with it).
function webhookErrorText(err) {
  const text = errorText(err);
  return state.lang !== "en" && err.code === "url_refused" && localServer() ? `${text} ${t("wh_local_hint")}` : text;
}

// The last test event of each endpoint this page sent (kept across refreshes of the list).
const webhookTests = {};

function renderWebhookTest(box, id) {
  box.textContent = "";
  const r = webhookTests[id];
  if (!r) return;
  if (r.sending) { box.textContent = t("wh_testing"); return; }
  if (r.err) {
    const p = document.createElement("span"); p.className = "field-error"; p.textContent = errorText(r.err); box.appendChild(p);
    return;
  }
  const res = r.res;
  const badge = document.createElement("span"); badge.className = "badge " + (res.delivered ? "completed" : "failed");
  badge.textContent = res.delivered ? t("wh_ok") : t("wh_failed");
  const fill = (key) => t(key).replace("{status}", res.status_code).replace("{ms}", res.duration_ms);
  let words;
  if (res.status_code) words = fill(res.delivered ? "wh_test_delivered" : "wh_test_answered");
  else {
    const known = TEXT.en["wh_test_err_" + res.error_code] ? t("wh_test_err_" + res.error_code) : res.error;
    words = fill("wh_test_failed").replace("{error}", known || "");
  }
  const text = document.createElement("span");
  text.textContent = ` ${words} · ${t("wh_test_event_id").replace("{id}", res.event_id)}`;
  box.append(badge, text);
  if (res.hint) { const h = document.createElement("p"); h.className = "hint"; h.textContent = t("wh_local_hint"); box.appendChild(h); }
}

async function testWebhook(id, button, box) {
  button.disabled = true;
  webhookTests[id] = { sending: true }; renderWebhookTest(box, id);
  try {
    webhookTests[id] = { res: await api("POST", `/console/api/webhooks/${encodeURIComponent(id)}/test`) };
  } catch (err) {
    webhookTests[id] = { err };
  } finally {
    button.disabled = false;
    // The list may have been drawn again meanwhile: show it in the card on the page now.
    renderWebhookTest($("wh-test-" + id) || box, id);
  }
}

function webhookCard(e) {
  const li = document.createElement("li"); li.className = "card"; li.id = "wh-" + e.id;
  const head = document.createElement("div");
  const badge = document.createElement("span"); badge.className = "badge " + (e.status === "enabled" ? "completed" : "failed");
  badge.textContent = e.status === "enabled" ? t("wh_enabled") : t("wh_disabled");
  const url = document.createElement("span"); url.className = "url"; url.textContent = " " + e.url;
  head.append(badge, url); li.appendChild(head);
  const meta = document.createElement("p"); meta.className = "meta";
  meta.textContent = [e.id, e.events.join(", "), e.description || ""].filter(Boolean).join(" · ");
  li.appendChild(meta);
  if (e.disabled_reason) {
    const why = document.createElement("p"); why.className = "field-error reason";
    why.textContent = `${t("wh_disabled_reason")}: ${e.disabled_reason}`; li.appendChild(why);
  }
  const d = e.delivery || { consecutive_failures: 0, last_attempts: [] };
  const rec = document.createElement("p"); rec.className = "meta";
  rec.textContent = `${d.consecutive_failures} ${t("wh_failures")} · ${t("wh_last_success")}: ${d.last_success_at ? when(d.last_success_at) : t("wh_never")}`;
  li.appendChild(rec);
  if (!d.last_attempts.length) {
    const none = document.createElement("p"); none.className = "hint"; none.textContent = t("wh_no_attempts"); li.appendChild(none);
  } else {
    const wrap = document.createElement("div"); wrap.className = "table-wrap";
    wrap.tabIndex = 0; wrap.setAttribute("role", "region"); wrap.setAttribute("aria-label", `${t("wh_attempts")} ${e.id}`);
    const table = document.createElement("table"); table.className = "attempts";
    const cap = document.createElement("caption"); cap.textContent = t("wh_attempts"); table.appendChild(cap);
    const thead = document.createElement("thead"); const hr = document.createElement("tr");
    [t("when"), t("wh_event"), t("wh_attempt"), t("wh_result")].forEach((h) => {
      const th = document.createElement("th"); th.textContent = h; hr.appendChild(th);
    });
    thead.appendChild(hr); table.appendChild(thead);
    const tb = document.createElement("tbody");
    d.last_attempts.forEach((a) => {
      const tr = document.createElement("tr");
      const result = a.succeeded ? `${t("wh_ok")} (HTTP ${a.status_code})`
        : `${t("wh_failed")}${a.status_code ? " (HTTP " + a.status_code + ")" : ""}${a.error ? ": " + a.error : ""}`;
      [when(a.attempted_at), a.type, String(a.attempt), result].forEach((text) => {
        const td = document.createElement("td"); td.textContent = text; tr.appendChild(td);
      });
      tb.appendChild(tr);
    });
    table.appendChild(tb); wrap.appendChild(table); li.appendChild(wrap);
  }
  const actions = document.createElement("div"); actions.className = "actions";
  // The test's result line is always there (one line reserved): a result appears without moving the page.
  const result = document.createElement("div"); result.className = "wh-test"; result.id = "wh-test-" + e.id;
  result.setAttribute("role", "status"); result.setAttribute("aria-live", "polite");
  renderWebhookTest(result, e.id);
  const test = document.createElement("button"); test.type = "button"; test.textContent = t("wh_test");
  test.setAttribute("aria-label", `${t("wh_test")} ${e.id}`);
  test.addEventListener("click", () => testWebhook(e.id, test, result));
  const rotate = document.createElement("button"); rotate.type = "button"; rotate.textContent = t("wh_rotate");
  rotate.setAttribute("aria-label", `${t("wh_rotate")} ${e.id}`);
  rotate.addEventListener("click", () => rotateWebhook(e.id));
  const del = document.createElement("button"); del.type = "button"; del.className = "danger"; del.textContent = t("wh_delete");
  del.setAttribute("aria-label", `${t("wh_delete")} ${e.id}`);
  del.addEventListener("click", () => deleteWebhook(e.id));
  actions.append(test, rotate, del); li.append(actions, result);
  return li;
}

async function loadWebhooks() {
  const list = await api("GET", "/console/api/webhooks");
  const ul = $("wh-list"); ul.textContent = "";
  list.data.forEach((e) => ul.appendChild(webhookCard(e)));
  $("wh-empty").hidden = list.data.length > 0;
}

function showWebhookSecret(endpoint) {
  $("wh-secret").hidden = false; $("wh-secret").dataset.endpoint = endpoint.id;
  const input = $("wh-secret-value"); input.value = endpoint.secret || ""; input.focus(); input.select();
}

async function createWebhook(ev) {
  ev.preventDefault();
  const form = $("wh-form"); clearErrors(form);
  const body = {
    url: $("wh-url").value.trim(),
    events: Array.from(form.querySelectorAll("input[name=events]:checked")).map((c) => c.value),
  };
  if ($("wh-description").value.trim()) body.description = $("wh-description").value.trim();
  const button = $("wh-create"); button.disabled = true;
  try {
    const e = await api("POST", "/console/api/webhooks", body);
    form.reset();
    await loadWebhooks();
    flash(t("wh_created"));
    showWebhookSecret(e);
  } catch (err) {
    const param = err.param ? String(err.param).split(/[.[]/)[0] : "";
    const target = ["url", "events", "description"].includes(param) ? param : "";
    ($(target ? "err-" + target : "err-wh-form")).textContent = webhookErrorText(err);
    const input = target === "url" ? $("wh-url") : target === "description" ? $("wh-description") : null;
    if (input) { input.setAttribute("aria-invalid", "true"); input.focus(); }
  } finally { button.disabled = false; }
}

async function rotateWebhook(id) {
  if (!(await askToConfirm("confirm_wh_rotate", "rotate_go"))) return;
  $("err-webhooks").textContent = "";
  try {
    const e = await api("POST", `/console/api/webhooks/${encodeURIComponent(id)}/rotate_secret`);
    await loadWebhooks();
    flash(t("wh_rotated"));
    showWebhookSecret(e);
  } catch (err) { $("err-webhooks").textContent = err.message; }
}

async function deleteWebhook(id) {
  if (!(await askToConfirm("confirm_wh_delete", "delete"))) return;
  $("err-webhooks").textContent = "";
  try {
    await api("DELETE", `/console/api/webhooks/${encodeURIComponent(id)}`);
    if ($("wh-secret").dataset.endpoint === id) { $("wh-secret").hidden = true; $("wh-secret-value").value = ""; }
    flash(t("wh_deleted"));
    await loadWebhooks();
  } catch (err) { $("err-webhooks").textContent = err.message; }
}

// Usage
const PALETTE = ["#1f5fbf", "#c2410c", "#15803d", "#7e22ce", "#b91c1c", "#0f766e", "#a16207", "#475569"];
const DAY = 86400;

function kindGroup(kind) { return kind === "video_seconds" ? "video_seconds" : "tokens"; }

function quantityText(r) {
  if (r.kind === "video_seconds") return t("n_seconds").replace("{n}", Number(r.video_seconds || 0).toLocaleString(state.lang));
  const n = Number(r.input_tokens || 0) + Number(r.cached_input_tokens || 0) + Number(r.cache_write_input_tokens || 0) + Number(r.output_tokens || 0);
  return t("n_tokens").replace("{n}", n.toLocaleString(state.lang));
}

function dayLabel(start) {
  return new Date(start * 1000).toLocaleDateString(state.lang, { month: "numeric", day: "numeric", timeZone: "UTC" });
}

// Spend per UTC day over the last 30 days as stacked bars (one bar per day with charges), drawn
// as inline SVG: no external assets.
function drawChart(u) {
  const split = state.usageSplit;
  const currency = u.currency;
  const today = Math.floor(Date.now() / 1000 / DAY) * DAY;
  const first = today - 29 * DAY;
  const perDay = {}; const series = [];
  (u.days || []).forEach((bucket) => {
    (bucket.results || []).forEach((r) => {
      const amount = Number(r.amount || 0);
      if (!(amount > 0)) return;
      const name = split === "kind" ? kindGroup(r.kind) : (r.model || "—");
      if (!series.includes(name)) series.push(name);
      const day = perDay[bucket.start_time] || (perDay[bucket.start_time] = {});
      day[name] = (day[name] || 0) + amount;
    });
  });
  series.sort();
  const totals = Object.values(perDay).map((d) => Object.values(d).reduce((a, b) => a + b, 0));
  const max = Math.max(0, ...totals);
  const box = $("u-chart"); box.textContent = "";
  const legend = $("u-legend"); legend.textContent = "";
  $("u-chart-empty").hidden = max > 0;
  box.closest("figure").hidden = !(max > 0);
  if (!(max > 0)) return;
  const NS = "http://www.w3.org/2000/svg";
  // Drawn at the box's own width, so its text stays at 11 px on a phone and on a wide screen.
  const W = Math.max(300, Math.round(box.clientWidth || 640)), H = W < 500 ? 170 : 220, L = 48, B = 24, T = 10;
  const svg = document.createElementNS(NS, "svg");
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`); svg.setAttribute("role", "img"); svg.id = "u-svg";
  svg.setAttribute("aria-labelledby", "u-svg-title");
  const title = document.createElementNS(NS, "title"); title.id = "u-svg-title";
  title.textContent = t("chart_label").replace("{split}", split === "kind" ? t("by_kind") : t("by_model"));
  svg.appendChild(title);
  const el = (name, attrs, text) => {
    const e = document.createElementNS(NS, name);
    Object.entries(attrs).forEach(([k, v]) => e.setAttribute(k, v));
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const plotW = W - L - 8, plotH = H - B - T;
  const slot = plotW / 30;
  // Axis: zero and the highest day.
  svg.appendChild(el("line", { x1: L, y1: T + plotH, x2: W - 8, y2: T + plotH, stroke: "#8792a2" }));
  svg.appendChild(el("line", { x1: L, y1: T, x2: W - 8, y2: T, stroke: "#d8dde3", "stroke-dasharray": "3 3" }));
  svg.appendChild(el("text", { x: L - 6, y: T + 4, "text-anchor": "end", class: "axis" }, money(max.toFixed(6), currency).replace(/ [A-Z]+$/, "")));
  svg.appendChild(el("text", { x: L - 6, y: T + plotH + 4, "text-anchor": "end", class: "axis" }, "0"));
  for (let i = 0; i < 30; i += 1) {
    const start = first + i * DAY;
    const x = L + i * slot;
    if ((W < 500 ? i % 10 === 2 : i % 7 === 1) || i === 29) {
      svg.appendChild(el("text", { x: x + slot / 2, y: H - 6, "text-anchor": "middle", class: "axis" }, dayLabel(start)));
    }
    const day = perDay[start];
    if (!day) continue;
    const g = el("g", { class: "bar", "data-day": new Date(start * 1000).toISOString().slice(0, 10) });
    const total = Object.values(day).reduce((a, b) => a + b, 0);
    g.appendChild(el("title", {}, t("day_total").replace("{day}", dayLabel(start)).replace("{amount}", money(total.toFixed(6), currency))));
    let y = T + plotH;
    series.forEach((name, n) => {
      if (!day[name]) return;
      const h = Math.max(1, (day[name] / max) * plotH);
      y -= h;
      g.appendChild(el("rect", { x: x + slot * 0.15, y, width: slot * 0.7, height: h, fill: PALETTE[n % PALETTE.length] }));
    });
    svg.appendChild(g);
  }
  box.appendChild(svg);
  series.forEach((name, n) => {
    const item = document.createElement("span"); item.className = "legend-item";
    const sw = document.createElement("span"); sw.className = "swatch"; sw.style.background = PALETTE[n % PALETTE.length];
    sw.setAttribute("aria-hidden", "true");
    item.append(sw, document.createTextNode(split === "kind" ? t("kind_" + name) : name));
    legend.appendChild(item);
  });
}

function cell(tr, text, cls) {
  const td = document.createElement("td"); td.textContent = text; if (cls) td.className = cls; tr.appendChild(td);
}

async function loadUsage() {
  const u = await api("GET", "/console/api/usage");
  state.usage = u;
  renderUsage();
}

function renderUsage() {
  const u = state.usage; if (!u) return;
  $("u-balance").textContent = money(u.balance, u.currency);
  $("u-reserved").textContent = money(u.reserved, u.currency);
  $("u-available").textContent = money(u.available, u.currency);
  const rows = u.last_30_days || [];
  let spent = 0, tokens = 0, seconds = 0;
  const byModelKind = {};
  rows.forEach((r) => {
    spent += Number(r.amount || 0);
    tokens += Number(r.input_tokens || 0) + Number(r.cached_input_tokens || 0) + Number(r.cache_write_input_tokens || 0) + Number(r.output_tokens || 0);
    seconds += Number(r.video_seconds || 0);
    const k = `${r.model}\u0000${r.kind}`;
    const agg = byModelKind[k] || (byModelKind[k] = { model: r.model, kind: r.kind, currency: r.currency, amount: 0,
      input_tokens: 0, cached_input_tokens: 0, cache_write_input_tokens: 0, output_tokens: 0, video_seconds: 0 });
    ["amount", "input_tokens", "cached_input_tokens", "cache_write_input_tokens", "output_tokens", "video_seconds"].forEach((f) => { agg[f] += Number(r[f] || 0); });
  });
  $("u-spent").textContent = money(spent.toFixed(6), u.currency);
  $("u-tokens").textContent = tokens.toLocaleString(state.lang);
  $("u-seconds").textContent = t("n_seconds").replace("{n}", seconds.toLocaleString(state.lang));
  drawChart(u);
  const bd = $("u-breakdown"); bd.textContent = "";
  Object.values(byModelKind).sort((a, b) => b.amount - a.amount).forEach((r) => {
    const tr = document.createElement("tr");
    cell(tr, r.model, "name"); cell(tr, t("kind_" + r.kind)); cell(tr, quantityText(r), "num"); cell(tr, money(r.amount.toFixed(6), r.currency), "num amount");
    bd.appendChild(tr);
  });
  if (!bd.children.length) {
    const tr = document.createElement("tr"); const td = document.createElement("td"); td.colSpan = 4; td.textContent = t("none"); tr.appendChild(td); bd.appendChild(tr);
  }
  const tb = $("u-charges"); tb.textContent = "";
  if (!u.recent_charges.length) {
    const tr = document.createElement("tr"); const td = document.createElement("td"); td.colSpan = 3; td.textContent = t("none"); tr.appendChild(td); tb.appendChild(tr);
  }
  u.recent_charges.forEach((c) => {
    const tr = document.createElement("tr");
    const what = `${c.type === "video" ? t("charge_video") : t("charge_chat")}${c.model ? " · " + c.model : ""}`;
    cell(tr, when(c.charged_at || 0)); cell(tr, what); cell(tr, money(c.amount, c.currency), "num amount");
    tb.appendChild(tr);
  });
}

function setUsageSplit(split) {
  state.usageSplit = split;
  $("u-by-model").setAttribute("aria-pressed", String(split === "model"));
  $("u-by-kind").setAttribute("aria-pressed", String(split === "kind"));
  renderUsage();
}

// Copies a shown-once secret; where the clipboard API is refused, selects it for Ctrl+C.
// Asks inside the page (a modal <dialog>: focus stays in it, Escape keeps things as they are),
// never with the browser's confirm(). Resolves true when the person confirms.
function askToConfirm(messageKey, actionKey) {
  const dialog = $("confirm-dialog");
  $("confirm-message").textContent = t(messageKey);
  $("confirm-yes").textContent = t(actionKey);
  $("confirm-no").textContent = t("keep");
  return new Promise((resolve) => {
    const done = (answer) => {
      dialog.removeEventListener("close", onClose);
      $("confirm-yes").onclick = null; $("confirm-no").onclick = null;
      if (dialog.open) dialog.close();
      resolve(answer);
    };
    const onClose = () => done(false);
    dialog.addEventListener("close", onClose);
    $("confirm-yes").onclick = () => done(true);
    $("confirm-no").onclick = () => done(false);
    dialog.showModal();
    $("confirm-no").focus();
  });
}

async function copyText(text) {
  try { await navigator.clipboard.writeText(text); flash(t("copied")); } catch (_) { /* the text stays selectable */ }
}

async function copyValue(id) {
  const input = $(id);
  try {
    await navigator.clipboard.writeText(input.value);
  } catch (_) {
    input.focus(); input.select();
    try { document.execCommand("copy"); } catch (__) { /* selected for the person to copy */ }
  }
  flash(t("copied"));
}

async function signOut() {
  // The conversation kept in this browser goes with the session (another person may sign in).
  if (state.session) { localStorage.removeItem(chatStoreKey()); state.chatRestored = false; state.chatId = null; }
  state.chat = []; state.chatRestored = false;
  try { await api("POST", "/console/api/signout"); } catch (_) { /* already ended */ }
  state.session = null;
  showSignedOut();
  flash(t("signed_out"));
}

async function start() {
  state.lang = chooseLanguage();
  buildCodeBoxes();
  applyLanguage();
  $("lang").addEventListener("click", () => {
    state.lang = state.lang === "ja" ? "en" : "ja";
    localStorage.setItem("reelgate.lang", state.lang);
    applyLanguage(); route();
  });
  $("signout").addEventListener("click", signOut);
  $("agree").addEventListener("click", agree);
  $("new-form").addEventListener("submit", createVideo);
  ["f-seconds", "f-aspect"].forEach((id) => $(id).addEventListener("change", updateQuote));
  $("chat-form").addEventListener("submit", sendChat);
  $("chat-settings").addEventListener("submit", (e) => e.preventDefault());
  // Enter sends, Shift+Enter is a new line (and Enter that ends an IME composition is not a send).
  $("c-message").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing && e.keyCode !== 229) { e.preventDefault(); sendChat(); }
  });
  $("c-new").addEventListener("click", newChat);
  ["c-message", "c-system"].forEach((id) => $(id).addEventListener("input", () => { if (state.session) saveChat(); }));
  $("f-prompt").addEventListener("input", () => {
    checkTranslation();
    if (state.formProblems && state.formProblems.length) {
      state.formProblems = formProblems();
      if (!state.formProblems.some(([name]) => name === "prompt")) { $("err-prompt").textContent = ""; $("f-prompt").removeAttribute("aria-invalid"); }
    }
  });
  $("f-aspect").addEventListener("change", showAspectHint);
  $("flash").addEventListener("click", () => flash(""));
  $("v-filter").addEventListener("change", () => { loadVideos().catch(() => {}); });
  let searchTimer = null;
  $("v-search").addEventListener("input", () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => { loadVideos().catch(() => {}); }, 300);
  });
  $("videos-more-button").addEventListener("click", () => { loadOlderVideos().catch(() => {}); });
  new IntersectionObserver((entries) => {
    if (entries.some((e) => e.isIntersecting)) loadOlderVideos().catch(() => {});
  }, { rootMargin: "400px" }).observe($("videos-more"));
  $("u-by-model").addEventListener("click", () => setUsageSplit("model"));
  $("u-by-kind").addEventListener("click", () => setUsageSplit("kind"));
  $("key-copy").addEventListener("click", () => copyValue("key-secret-value"));
  $("signin-command-copy").addEventListener("click", () => copyValue("signin-command"));
  Object.keys(CODE_BOXES).forEach((box) => {
    ["curl", "python", "node"].forEach((l) => $(`${box}-code-${l}`).addEventListener("click", () => showCode(box, l)));
    $(`${box}-code-copy`).addEventListener("click", () => copyText($(`${box}-code-text`).textContent));
    $(`${box}-code`).addEventListener("toggle", () => { if ($(`${box}-code`).open) showCode(box); });
  });
  $("vp-op-form").addEventListener("submit", submitOperation);
  $("vp-op-close").addEventListener("click", () => { $("vp-op-form").hidden = true; });
  $("wh-copy").addEventListener("click", () => copyValue("wh-secret-value"));
  $("c-model").addEventListener("change", updateEffort);
  $("c-image").addEventListener("change", chooseChatImage);
  $("c-image-remove").addEventListener("click", () => { clearChatImage(); $("c-image").focus(); });
  $("f-model").addEventListener("change", () => { showModelInputs(); updateQuote(); });
  Object.keys(SLOTS).forEach((name) => $("u-" + name).addEventListener("change", () => chooseFiles(name)));
  $("wh-form").addEventListener("submit", createWebhook);
  $("wh-refresh").addEventListener("click", () => loadWebhooks().catch((err) => { $("err-webhooks").textContent = err.message; }));
  $("key-form").addEventListener("submit", createKey);
  window.addEventListener("hashchange", () => { flash(""); route(); });
  try {
    state.session = await api("GET", "/console/api/session");
    localStorage.setItem("reelgate.last_person",
      JSON.stringify({ user: state.session.user.id, org: state.session.organization.id }));
    $("nav").hidden = false; $("signout").hidden = false;
    $("who").textContent = `${state.session.user.email} · ${state.session.organization.name}`;
    if (!location.hash && !videoPagePath()) {
      const terms = await api("GET", "/console/api/terms");
      // A page the person chose while this loaded wins over the default landing page.
      if (!location.hash) location.hash = terms.accepted ? "#new" : "#terms";
      return; // hashchange routes
    }
  } catch (_) { state.session = null; }
  route();
}

document.addEventListener("DOMContentLoaded", start);
