class EventBus:
    def __init__(self):
        self.listeners = {}

    def subscribe(self, topic, callback):
        self.listeners.setdefault(topic, []).append(callback)

    def publish(self, topic, payload):
        for callback in self.listeners.get(topic, []):
            callback(payload)


def chunked(seq, size):
    return [seq[i:i + size] for i in range(0, len(seq), size)]
