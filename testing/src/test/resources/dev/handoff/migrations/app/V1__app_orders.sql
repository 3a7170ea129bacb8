CREATE TABLE app_order (id bigint PRIMARY KEY, total_cents bigint NOT NULL);
