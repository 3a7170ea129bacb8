CREATE TABLE IF NOT EXISTS effect (id bigserial PRIMARY KEY, grp text NOT NULL, order_id text NOT NULL);
