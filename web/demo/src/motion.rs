//! What moves on the page while it saves: a coin spinning, drawn by `requestAnimationFrame` on
//! the page's own thread (so it would stop if a save stalled that thread), and the "saving…"
//! indicator beside it. The page counts the frames drawn, during each save too.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::Closure;
use web_sys::{CanvasRenderingContext2d, Document, HtmlCanvasElement};

/// The animation's state.
#[derive(Debug, Default)]
pub struct Motion {
    /// Frames drawn since the page started.
    pub frames: Cell<u64>,
    /// Whether a save is under way (the indicator shows).
    pub saving: Cell<bool>,
}

type Frame = Rc<RefCell<Option<Closure<dyn FnMut(f64)>>>>;

fn request(frame: &Frame) {
    if let (Some(window), Some(callback)) = (web_sys::window(), frame.borrow().as_ref()) {
        let _ = window.request_animation_frame(callback.as_ref().unchecked_ref());
    }
}

/// Starts drawing `#spinner` every frame, and shows `#saving` while `motion.saving`.
pub fn start(doc: &Document, motion: &Rc<Motion>) {
    let Some(canvas) = doc
        .get_element_by_id("spinner")
        .and_then(|e| e.dyn_into::<HtmlCanvasElement>().ok())
    else {
        return;
    };
    let Some(ctx) = canvas
        .get_context("2d")
        .ok()
        .flatten()
        .and_then(|c| c.dyn_into::<CanvasRenderingContext2d>().ok())
    else {
        return;
    };
    let indicator = doc.get_element_by_id("saving");
    let body = doc.body();
    let frame: Frame = Rc::default();
    let again = Rc::clone(&frame);
    let motion = Rc::clone(motion);
    *frame.borrow_mut() = Some(Closure::new(move |t: f64| {
        let n = motion.frames.get() + 1;
        motion.frames.set(n);
        // A coin seen edge-on as it turns: its width follows the time.
        let (w, h) = (f64::from(canvas.width()), f64::from(canvas.height()));
        ctx.clear_rect(0.0, 0.0, w, h);
        ctx.set_fill_style_str("#f0c040");
        ctx.begin_path();
        let rx = (w / 2.0 - 2.0) * (t / 300.0).cos().abs().max(0.08);
        let _ = ctx.ellipse(
            w / 2.0,
            h / 2.0,
            rx,
            h / 2.0 - 2.0,
            0.0,
            0.0,
            std::f64::consts::TAU,
        );
        ctx.fill();
        let saving = motion.saving.get();
        if let Some(el) = &indicator {
            let _ = el.set_attribute("style", if saving { "" } else { "visibility: hidden" });
        }
        if let Some(body) = &body {
            let _ = body.set_attribute("data-frames", &n.to_string());
            if saving {
                let _ = body.set_attribute("data-saw-saving", "yes");
            }
        }
        request(&again);
    }));
    request(&frame);
}
