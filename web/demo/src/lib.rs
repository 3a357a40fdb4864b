//! Coin walk: the demo page of `savegame-web`. A player walks a 10×10 board picking up coins;
//! the page saves the game to IndexedDB (a save button over three slots, an autosave every 15
//! seconds when something changed), and lists the saves in a load menu with their labels and
//! times and a thumbnail of the board (a canvas capture stored in the save's metadata), read
//! from head records alone. Saves go through a save worker (`savegame_web::SaveWorker`: the
//! same module in a dedicated worker, entry [`demo_save_worker`]), so the spinning coin and the
//! "saving…" indicator, drawn every frame on the page's thread, never stop for a save.
//!
//! `scripts/web-demo.sh serve` builds it and serves it on <http://localhost:8000>.
//! `index.html?script` plays a scripted session instead (moves, a save, an autosave, more
//! moves, a load of the save) and marks the page `data-script="passed"` when the loaded state
//! is the saved one: the screenshot test reads that, the load menu's text and thumbnails.

mod motion;
mod picture;

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use savegame::{Codec, Key, Originator, SaveLoadManager, SlotId};
use savegame_web::{IndexedDbSaves, SaveWorker};
use serde::{Deserialize, Serialize};
use wasm_bindgen::JsCast;
use wasm_bindgen::prelude::{Closure, wasm_bindgen};
use web_sys::{Document, Element, HtmlSelectElement, KeyboardEvent};

/// The board's width and height.
pub const SIZE: i32 = 10;

/// The game: where the player is, the coins left, the score.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Game {
    /// The player's column.
    pub x: i32,
    /// The player's row.
    pub y: i32,
    /// The coins still on the board.
    pub coins: Vec<(i32, i32)>,
    /// Coins picked up.
    pub score: u32,
    /// Steps taken.
    pub moves: u32,
}

/// What a save holds of the game.
#[derive(Debug, Serialize, Deserialize)]
pub struct GameMemento {
    x: i32,
    y: i32,
    coins: Vec<(i32, i32)>,
    score: u32,
    moves: u32,
}

impl Originator for Game {
    type Memento = GameMemento;

    fn create_memento(&self) -> GameMemento {
        GameMemento {
            x: self.x,
            y: self.y,
            coins: self.coins.clone(),
            score: self.score,
            moves: self.moves,
        }
    }

    fn restore_memento(&mut self, m: GameMemento) -> savegame::Result<()> {
        *self = Game {
            x: m.x,
            y: m.y,
            coins: m.coins,
            score: m.score,
            moves: m.moves,
        };
        Ok(())
    }
}

impl Default for Game {
    fn default() -> Self {
        Self::new()
    }
}

impl Game {
    /// A new game: the player in the corner, coins on a fixed pattern.
    #[must_use]
    pub fn new() -> Self {
        let coins = (0..SIZE * SIZE)
            .map(|i| (i % SIZE, i / SIZE))
            .filter(|&(x, y)| (x * 7 + y * 3) % 5 == 2)
            .collect();
        Game {
            x: 0,
            y: 0,
            coins,
            score: 0,
            moves: 0,
        }
    }

    /// Moves the player one square (walls stop it), picking up a coin there.
    pub fn step(&mut self, dx: i32, dy: i32) {
        let (x, y) = (
            (self.x + dx).clamp(0, SIZE - 1),
            (self.y + dy).clamp(0, SIZE - 1),
        );
        if (x, y) == (self.x, self.y) {
            return;
        }
        (self.x, self.y) = (x, y);
        self.moves += 1;
        if let Some(i) = self.coins.iter().position(|&c| c == (x, y)) {
            self.coins.remove(i);
            self.score += 1;
        }
    }

    /// The board as text: `@` the player, `o` a coin.
    #[must_use]
    pub fn render(&self) -> String {
        let mut out = String::new();
        for y in 0..SIZE {
            for x in 0..SIZE {
                let c = if (x, y) == (self.x, self.y) {
                    '@'
                } else if self.coins.contains(&(x, y)) {
                    'o'
                } else {
                    '·'
                };
                out.push(c);
                out.push(' ');
            }
            out.push('\n');
        }
        out
    }

    /// The label a save of this state gets in the load menu.
    #[must_use]
    pub fn label(&self) -> String {
        format!("{} coins, {} moves", self.score, self.moves)
    }
}

/// The page: its document, the saves, the game.
struct Page {
    doc: Document,
    saves: IndexedDbSaves,
    game: RefCell<Game>,
    dirty: Cell<bool>,
    started: f64,
    motion: Rc<motion::Motion>,
    /// The URLs of the thumbnails the load menu shows.
    thumbnails: RefCell<Vec<String>>,
}

type Shared = Rc<Page>;

/// How the game's saves are made, on the page and in the save worker alike.
fn builder() -> savegame::ManagerBuilder {
    SaveLoadManager::builder()
        .codec(Codec::MessagePack)
        // A key in a page is obfuscation, not secrecy (the guide's guarantees say so): it stops
        // casual edits of the saves in the browser's devtools.
        .key(Key::from_bytes(*b"coin walk demo key: not a secret"))
        .backups(1)
        .autosave_slots(2)
}

/// The save worker's entry: the worker runs this same module, and saves as the page does.
///
/// # Errors
/// When this is not a dedicated worker.
#[wasm_bindgen]
pub fn demo_save_worker() -> Result<(), String> {
    savegame_web::serve(builder).map_err(|e| e.to_string())
}

/// Starts the page (index.html calls it once the module is loaded; not a start function,
/// which the save worker would run too).
#[wasm_bindgen]
pub fn start_page() {
    wasm_bindgen_futures::spawn_local(async {
        if let Err(e) = run().await
            && let Some(doc) = web_sys::window().and_then(|w| w.document())
        {
            set_text(&doc, "status", &format!("error: {e}"));
        }
    });
}

fn set_text(doc: &Document, id: &str, text: &str) {
    if let Some(el) = doc.get_element_by_id(id) {
        el.set_text_content(Some(text));
    }
}

fn element(doc: &Document, id: &str) -> Result<Element, String> {
    doc.get_element_by_id(id)
        .ok_or_else(|| format!("the page has no #{id}"))
}

/// Runs `f` on each click of `#id`.
fn on_click(page: &Shared, id: &str, f: impl Fn(&Shared) + 'static) -> Result<(), String> {
    let page2 = Rc::clone(page);
    let handler = Closure::<dyn Fn()>::new(move || f(&page2));
    element(&page.doc, id)?
        .add_event_listener_with_callback("click", handler.as_ref().unchecked_ref())
        .map_err(|e| format!("{e:?}"))?;
    // The page lives as long as its handlers: they are never removed.
    handler.forget();
    Ok(())
}

async fn run() -> Result<(), String> {
    let window = web_sys::window().ok_or("no window")?;
    let doc = window.document().ok_or("no document")?;
    let scripted = window
        .location()
        .search()
        .is_ok_and(|s| s.contains("script"));
    // The scripted run starts from an empty database of its own.
    let db = if scripted {
        format!("coin-walk-script-{}", js_sys::Date::now())
    } else {
        "coin-walk".to_owned()
    };
    let saves = IndexedDbSaves::open(&db, builder())
        .await
        .map_err(|e| e.to_string())?;
    // Saves off the page's thread; should the worker not start, on the page (and it says so).
    let (saves, saver) = match SaveWorker::spawn("demo_save_worker").await {
        Ok(worker) => (saves.with_worker(worker), "worker".to_owned()),
        Err(e) => (saves, format!("page ({e})")),
    };
    if let Some(body) = doc.body() {
        let _ = body.set_attribute("data-saver", &saver);
    }
    // Ask the browser to keep the saves under storage pressure (the guide says what a refusal
    // means: the saves may be evicted, whole, with the rest of the site's data).
    let persisted = saves.persist().await;
    set_text(
        &doc,
        "storage",
        &format!(
            "Saves through the {saver}; storage {}.",
            if persisted {
                "persistent"
            } else {
                "best-effort (the browser may evict it when the disk is full)"
            }
        ),
    );
    let page = Rc::new(Page {
        doc,
        saves,
        game: RefCell::new(Game::new()),
        dirty: Cell::new(false),
        started: js_sys::Date::now(),
        motion: Rc::default(),
        thumbnails: RefCell::default(),
    });
    motion::start(&page.doc, &page.motion);
    page.draw();
    wire(&page)?;
    refresh_menu(&page).await;
    if scripted {
        script(&page).await;
    } else {
        set_text(&page.doc, "status", "Ready. Move with the arrow keys.");
    }
    Ok(())
}

fn wire(page: &Shared) -> Result<(), String> {
    for (id, dx, dy) in [
        ("left", -1, 0),
        ("right", 1, 0),
        ("up", 0, -1),
        ("down", 0, 1),
    ] {
        on_click(page, id, move |p| p.step(dx, dy))?;
    }
    on_click(page, "save", |p| {
        let slot = p
            .doc
            .get_element_by_id("slot")
            .and_then(|e| e.dyn_into::<HtmlSelectElement>().ok())
            .and_then(|s| s.value().parse().ok())
            .unwrap_or(1);
        let p = Rc::clone(p);
        wasm_bindgen_futures::spawn_local(async move {
            save(&p, SlotId::Numbered(slot)).await;
        });
    })?;
    on_click(page, "refresh", |p| {
        let p = Rc::clone(p);
        wasm_bindgen_futures::spawn_local(async move { refresh_menu(&p).await });
    })?;

    let keys = Rc::clone(page);
    let on_key = Closure::<dyn Fn(KeyboardEvent)>::new(move |e: KeyboardEvent| {
        let (dx, dy) = match e.key().as_str() {
            "ArrowLeft" => (-1, 0),
            "ArrowRight" => (1, 0),
            "ArrowUp" => (0, -1),
            "ArrowDown" => (0, 1),
            _ => return,
        };
        e.prevent_default();
        keys.step(dx, dy);
    });
    page.doc
        .add_event_listener_with_callback("keydown", on_key.as_ref().unchecked_ref())
        .map_err(|e| format!("{e:?}"))?;
    on_key.forget();

    let auto = Rc::clone(page);
    let on_timer = Closure::<dyn Fn()>::new(move || {
        if auto.dirty.get() {
            let p = Rc::clone(&auto);
            wasm_bindgen_futures::spawn_local(async move {
                autosave(&p).await;
            });
        }
    });
    web_sys::window()
        .ok_or("no window")?
        .set_interval_with_callback_and_timeout_and_arguments_0(
            on_timer.as_ref().unchecked_ref(),
            15_000,
        )
        .map_err(|e| format!("{e:?}"))?;
    on_timer.forget();
    Ok(())
}

impl Page {
    fn step(&self, dx: i32, dy: i32) {
        self.game.borrow_mut().step(dx, dy);
        self.dirty.set(true);
        self.draw();
    }

    fn draw(&self) {
        let game = self.game.borrow();
        set_text(&self.doc, "board", &game.render());
        set_text(
            &self.doc,
            "score",
            &format!(
                "Score {} · moves {} · coins left {}",
                game.score,
                game.moves,
                game.coins.len()
            ),
        );
    }

    /// The game now, captured with a thumbnail of the board. The state is captured first,
    /// so that the thumbnail (drawn and encoded by the browser, asynchronously) shows it.
    async fn snapshot(&self) -> Result<savegame::Snapshot, String> {
        let game = self.game.borrow().clone();
        let playtime = Duration::from_millis((js_sys::Date::now() - self.started).max(0.0) as u64);
        let mut snapshot = self
            .saves
            .manager()
            .snapshot()
            .with_label(game.label())
            .with_playtime(playtime);
        snapshot.capture("game", &game).map_err(|e| e.to_string())?;
        let thumbnail = picture::thumbnail(&self.doc, &game).await?;
        Ok(snapshot.with_thumbnail(thumbnail))
    }

    /// Runs `save` with the "saving…" indicator showing; how long it took and how many
    /// frames the page drew meanwhile, beside its result.
    async fn saving<T>(
        &self,
        save: impl std::future::Future<Output = savegame_web::Result<T>>,
    ) -> (savegame_web::Result<T>, String) {
        self.motion.saving.set(true);
        let (t0, frames) = (js_sys::Date::now(), self.motion.frames.get());
        let result = save.await;
        self.motion.saving.set(false);
        let stretch = self
            .saves
            .worker()
            .map(|w| {
                format!(
                    ", the page's longest stretch {:.1} ms",
                    w.longest_stretch_ms()
                )
            })
            .unwrap_or_default();
        let how = format!(
            "in {:.0} ms, {} frames drawn meanwhile{stretch}",
            js_sys::Date::now() - t0,
            self.motion.frames.get() - frames
        );
        (result, how)
    }
}

async fn save(page: &Shared, slot: SlotId) -> bool {
    let snapshot = page.snapshot().await;
    let (result, how) = page
        .saving(async {
            match snapshot {
                Ok(snapshot) => page.saves.save(slot, &snapshot).await,
                Err(e) => Err(savegame_web::Error::Unavailable {
                    operation: "saving",
                    reason: e,
                }),
            }
        })
        .await;
    let ok = result.is_ok();
    let text = match result {
        Ok(report) => {
            page.dirty.set(false);
            format!("Saved to slot {slot} {how} ({} bytes).", report.bytes)
        }
        Err(e) => format!("Save failed, the previous save is intact: {e}"),
    };
    set_text(&page.doc, "status", &text);
    refresh_menu(page).await;
    ok
}

async fn autosave(page: &Shared) -> bool {
    let snapshot = page.snapshot().await;
    let (result, how) = page
        .saving(async {
            match snapshot {
                Ok(snapshot) => page.saves.autosave(&snapshot).await,
                Err(e) => Err(savegame_web::Error::Unavailable {
                    operation: "saving",
                    reason: e,
                }),
            }
        })
        .await;
    let ok = result.is_ok();
    let text = match result {
        Ok(report) => {
            page.dirty.set(false);
            format!("Autosaved to {} {how}.", report.slot)
        }
        Err(e) => format!("Autosave failed, the previous save is intact: {e}"),
    };
    set_text(&page.doc, "status", &text);
    refresh_menu(page).await;
    ok
}

async fn load(page: &Shared, slot: SlotId) -> bool {
    let t0 = js_sys::Date::now();
    let result = page.saves.load(slot).await.map_err(|e| e.to_string());
    let ms = js_sys::Date::now() - t0;
    let text = match result.and_then(|loaded| {
        loaded
            .snapshot
            .restore("game", &mut *page.game.borrow_mut())
            .map_err(|e| e.to_string())?;
        Ok(loaded)
    }) {
        Ok(loaded) => {
            page.dirty.set(false);
            page.draw();
            let fallback = match loaded.report.recovered_from_backup {
                Some(n) => format!(" (from backup {n}: the save was damaged)"),
                None => String::new(),
            };
            format!(
                "Loaded slot {slot}: {} in {ms:.0} ms{fallback}.",
                loaded.snapshot.metadata().label
            )
        }
        Err(e) => {
            set_text(&page.doc, "status", &format!("Load failed: {e}"));
            return false;
        }
    };
    set_text(&page.doc, "status", &text);
    true
}

/// "2026-12-01 12:30:05 UTC" from a time.
fn when(t: std::time::SystemTime) -> String {
    let ms = t
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_millis() as f64);
    let iso = String::from(js_sys::Date::new(&ms.into()).to_iso_string());
    // 2026-12-01T12:30:05.123Z
    format!(
        "{} {} UTC",
        iso.get(..10).unwrap_or(""),
        iso.get(11..19).unwrap_or("")
    )
}

async fn refresh_menu(page: &Shared) {
    let Ok(menu) = element(&page.doc, "menu") else {
        return;
    };
    menu.set_inner_html("");
    let slots = match page.saves.list().await {
        Ok(slots) => slots,
        Err(e) => {
            menu.set_text_content(Some(&format!("The load menu cannot be read: {e}")));
            return;
        }
    };
    if slots.is_empty() {
        menu.set_text_content(Some("No saves yet."));
    }
    for url in page.thumbnails.borrow_mut().drain(..) {
        picture::forget(&url);
    }
    for info in slots {
        let Ok(li) = page.doc.create_element("li") else {
            continue;
        };
        let name = match info.slot {
            SlotId::Numbered(n) => format!("slot {n}"),
            other => other.to_string(),
        };
        let saved = info.saved_at().map(when).unwrap_or_default();
        let label = info.label().unwrap_or("(no label)").to_owned();
        li.set_inner_html(&format!(
            "<span class=\"slot\">{}</span> · <span class=\"label\">{}</span> · \
             <span class=\"time\">{}</span> · {} bytes{} ",
            escape(&name),
            escape(&label),
            escape(&saved),
            info.file_size,
            if info.backups > 0 { " · 1 backup" } else { "" },
        ));
        // The thumbnail, from the head record's metadata like the label.
        let thumbnail = info
            .header
            .as_ref()
            .and_then(|h| h.metadata.thumbnail.as_deref())
            .and_then(|png| picture::url_of(png).ok());
        if let (Some(url), Ok(img)) = (thumbnail, page.doc.create_element("img")) {
            let _ = img.set_attribute("src", &url);
            let _ = img.set_attribute("alt", "");
            let _ = img.set_attribute("class", "thumb");
            let _ = li.prepend_with_node_1(&img);
            page.thumbnails.borrow_mut().push(url);
        }
        if let Ok(button) = page.doc.create_element("button") {
            button.set_text_content(Some("Load"));
            let (p, slot) = (Rc::clone(page), info.slot);
            let handler = Closure::<dyn Fn()>::new(move || {
                let p = Rc::clone(&p);
                wasm_bindgen_futures::spawn_local(async move {
                    load(&p, slot).await;
                });
            });
            let _ =
                button.add_event_listener_with_callback("click", handler.as_ref().unchecked_ref());
            handler.forget();
            let _ = li.append_child(&button);
        }
        let _ = menu.append_child(&li);
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The scripted session of `?script`: moves, a save, an autosave, more moves, a load; the page
/// says whether the loaded state was the saved one.
async fn script(page: &Shared) {
    for (dx, dy) in [(1, 0), (1, 0), (0, 1), (1, 0), (0, 1), (0, 1)] {
        page.step(dx, dy);
    }
    let saved = page.game.borrow().clone();
    let mut ok = save(page, SlotId::Numbered(1)).await;
    for (dx, dy) in [(1, 0), (0, 1)] {
        page.step(dx, dy);
    }
    ok &= autosave(page).await;
    for (dx, dy) in [(1, 0), (1, 0)] {
        page.step(dx, dy);
    }
    ok &= load(page, SlotId::Numbered(1)).await;
    refresh_menu(page).await;
    let matches = *page.game.borrow() == saved;
    let verdict = if ok && matches { "passed" } else { "failed" };
    if let Some(body) = page.doc.body() {
        let _ = body.set_attribute("data-script", verdict);
    }
    if let Ok(status) = element(&page.doc, "status") {
        let text = status.text_content().unwrap_or_default();
        status.set_text_content(Some(&format!(
            "Scripted session {verdict}: {text} The loaded state {} the saved one ({}).",
            if matches { "is" } else { "is NOT" },
            saved.label()
        )));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_pick_up_coins_and_walls_stop_the_player() {
        let mut game = Game::new();
        let coins = game.coins.len();
        game.step(-1, 0);
        assert_eq!((game.x, game.y, game.moves), (0, 0, 0));
        for _ in 0..SIZE {
            game.step(1, 0);
        }
        assert_eq!(game.x, SIZE - 1);
        assert_eq!(game.score as usize, coins - game.coins.len());
        assert!(game.score > 0);
    }
}
