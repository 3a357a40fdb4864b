//! The board as a picture: drawn on a small canvas, captured as PNG bytes for a save's
//! thumbnail (its metadata's `thumbnail` field, which the load menu reads from head records),
//! and shown again in the menu from those bytes.

use js_sys::{Array, Function, Promise, Uint8Array};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{Blob, BlobPropertyBag, CanvasRenderingContext2d, Document, HtmlCanvasElement, Url};

use crate::{Game, SIZE};

/// Pixels per square of the thumbnail: 10×10 squares make a 60×60 picture.
const CELL: i32 = 6;

fn err(e: JsValue) -> String {
    format!("{e:?}")
}

/// The board drawn on a canvas of its own (not in the page).
fn draw(doc: &Document, game: &Game) -> Result<HtmlCanvasElement, String> {
    let canvas: HtmlCanvasElement = doc
        .create_element("canvas")
        .map_err(err)?
        .dyn_into()
        .map_err(|_| "not a canvas".to_owned())?;
    let side = u32::try_from(SIZE * CELL).unwrap_or(60);
    canvas.set_width(side);
    canvas.set_height(side);
    let ctx: CanvasRenderingContext2d = canvas
        .get_context("2d")
        .map_err(err)?
        .ok_or("no 2d context")?
        .dyn_into()
        .map_err(|_| "not a 2d context".to_owned())?;
    ctx.set_fill_style_str("#203020");
    ctx.fill_rect(0.0, 0.0, f64::from(side), f64::from(side));
    let cell = f64::from(CELL);
    ctx.set_fill_style_str("#f0c040");
    for &(x, y) in &game.coins {
        ctx.fill_rect(
            f64::from(x) * cell + 1.0,
            f64::from(y) * cell + 1.0,
            cell - 2.0,
            cell - 2.0,
        );
    }
    ctx.set_fill_style_str("#8fe0ff");
    ctx.fill_rect(
        f64::from(game.x) * cell,
        f64::from(game.y) * cell,
        cell,
        cell,
    );
    Ok(canvas)
}

/// The board as PNG bytes: the thumbnail of a save of `game`.
///
/// # Errors
/// What the browser said.
pub async fn thumbnail(doc: &Document, game: &Game) -> Result<Vec<u8>, String> {
    let canvas = draw(doc, game)?;
    let blob = Promise::new(&mut |resolve: Function, _reject: Function| {
        let _ = canvas.to_blob_with_type(&resolve, "image/png");
    });
    let blob: Blob = JsFuture::from(blob)
        .await
        .map_err(err)?
        .dyn_into()
        .map_err(|_| "the canvas gave no picture".to_owned())?;
    let bytes = JsFuture::from(blob.array_buffer()).await.map_err(err)?;
    Ok(Uint8Array::new(&bytes).to_vec())
}

/// A URL that shows PNG `bytes` (revoke it with [`forget`] once it is no longer shown).
///
/// # Errors
/// What the browser said.
pub fn url_of(bytes: &[u8]) -> Result<String, String> {
    let parts = Array::of1(&Uint8Array::from(bytes));
    let options = BlobPropertyBag::new();
    options.set_type("image/png");
    let blob = Blob::new_with_u8_array_sequence_and_options(&parts, &options).map_err(err)?;
    Url::create_object_url_with_blob(&blob).map_err(err)
}

/// Frees a URL of [`url_of`].
pub fn forget(url: &str) {
    let _ = Url::revoke_object_url(url);
}
