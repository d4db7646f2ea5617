"""The PNG encoder's room: glrec's own PNG writer (:mod:`.writer`, also the dataset shards'), its encoder stage
(:mod:`.encoder`: lossless RGB or RGBA frames, compressed on every core) and its row (:mod:`.row`)."""
