ALTER TABLE app_order ADD COLUMN status varchar(20) NOT NULL DEFAULT 'new';
