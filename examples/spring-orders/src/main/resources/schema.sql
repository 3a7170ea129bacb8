CREATE TABLE IF NOT EXISTS orders (id text PRIMARY KEY, amount_cents bigint NOT NULL);
CREATE TABLE IF NOT EXISTS invoice (order_id text PRIMARY KEY, amount_cents bigint NOT NULL);
CREATE TABLE IF NOT EXISTS shipment (order_id text PRIMARY KEY);
