"""A scene whose picture shows the viewer input it got (for the browser test).

Red until a pointer is pressed, then green; a key press makes it blue. Each
colour fills the frame, so one decoded pixel tells which input arrived.
"""


class InputProbe:
    def __init__(self):
        self.colour = (1.0, 0.0, 0.0)
        self.events = []

    def setup(self, ctx, size):
        self.ctx = ctx

    def on_input(self, event):
        self.events.append(event)
        if event.kind == "pointer" and event.action == "down":
            self.colour = (0.0, 1.0, 0.0)
        elif event.kind == "key" and event.action == "down":
            self.colour = (0.0, 0.0, 1.0)

    def render(self, t):
        self.ctx.clear(*self.colour)

    def close(self):
        pass
